/* example_lib.c: softmax of two rows through libassoc, the way the README
 * shows it.  Build: cc example_lib.c $(pkg-config --cflags --libs assoc)
 * Run from the repository root (it loads specs/online_softmax.yaml);
 * its argument names the device (cpu, gpu, emu, interp, auto; cpu when none). */
#include <assoc.h>
#include <math.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	enum { ROWS = 2, LEN = 5 };
	float x[ROWS][LEN] = {{1, 2, 3, 4, 5}, {0, 0, 0, 0, 0}};
	float y[ROWS][LEN], lse[ROWS];
	AssocSpec *spec = NULL;
	AssocKernel *k = NULL;
	AssocStatus st = assoc_spec_load(&spec, "specs/online_softmax.yaml", NULL, 0);
	if (st == ASSOC_OK)
		st = assoc_compile(spec, argc > 1 ? argv[1] : "cpu", 0, &k);
	if (st == ASSOC_OK) {
		AssocBuffer bufs[] = {{"x", x, sizeof x}, {"y", y, sizeof y}, {"lse", lse, sizeof lse}};
		st = assoc_run(k, ROWS, LEN, bufs, 3, NULL, 0);
	}
	if (st != ASSOC_OK) {
		fprintf(stderr, "example: %s: %s\n", assoc_strerror(st), k ? assoc_kernel_error(k) : assoc_spec_error(spec));
		assoc_kernel_free(k);
		assoc_spec_free(spec);
		return 1;
	}
	for (int r = 0; r < ROWS; r++) {
		printf("row %d: lse %.6f, y", r, lse[r]);
		for (int j = 0; j < LEN; j++)
			printf(" %.6f", y[r][j]);
		printf("\n");
	}
	assoc_kernel_free(k);
	assoc_spec_free(spec);
	return fabsf(lse[1] - logf(5)) < 1e-6f ? 0 : 1;
}
