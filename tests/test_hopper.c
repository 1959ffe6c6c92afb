/* test_hopper.c: the emulator's tensor maps refuse what the driver's
 * cuTensorMapEncodeTiled refuses. */
#include <stdint.h>
#include <string.h>

#include "runtime/emu/emu_tmap.h"
#include "testutil.h"

/* templates/hopper.cuh's AscTmap */
typedef struct {
	_Alignas(64) unsigned long long w[16];
} Tmap;

Test(hopper, tensor_maps_are_checked_as_the_driver_does)
{
	_Alignas(16) static unsigned short g[64 * 64];
	unsigned long long dims[3] = {64, 64, 1}, strides[2] = {128, 8192};
	unsigned box[3] = {64, 8, 1};
	Tmap m;
	char msg[256];
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, box, 128, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(emu_tmap_encode(&m, 2, 6, g, dims, strides, box, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "rank 6 outside [1, 5]"), "%s", msg);
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, (char *)g + 8, dims, strides, box, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "is not 16-byte aligned"), "%s", msg);
	unsigned long long odd[1] = {120};
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, odd, box, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "stride of dimension 1 (120 bytes) is not a multiple of 16"), "%s", msg);
	unsigned wide[2] = {128, 8};
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, wide, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "inner dimension (256 bytes) exceeds the 128-byte swizzle span"), "%s", msg);
	unsigned narrow[2] = {4, 8};
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, narrow, 0, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "inner dimension is 8 bytes, not a multiple of 16"), "%s", msg);
	unsigned big[2] = {64, 257};
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, big, 128, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "box dimension 1 of 257 elements outside [1, 256]"), "%s", msg);
	cr_assert_eq(emu_tmap_encode(&m, 2, 2, g, dims, strides, box, 96, msg, sizeof msg), -1);
	cr_expect(strstr(msg, "swizzle of 96 bytes"), "%s", msg);
}
