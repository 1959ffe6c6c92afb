/* cli.h: the command line, shared by the command files (cmd_*.c). */
#ifndef ASSOC_CLI_H
#define ASSOC_CLI_H

#include "compiler/check/check.h"
#include "compiler/check/verdict.h"
#include "compiler/devices/npy.h"
#include "compiler/devices/paged.h"
#include "compiler/devices/run.h"
#include "compiler/util/cache.h"

/* EXIT_FAIL only where a check that ran failed (a law, the reference, an
 * output out of tolerance); EXIT_UNABLE, the same code as EXIT_USAGE, where
 * the command could not do what was asked: a device, compiler or file that
 * cannot be used, a configuration the device cannot run. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_UNABLE = 2, MAX_DEFINES = 64, MAX_FILES = 32 };
enum { MAX_ROWS = 1 << 24, MAX_LEN = 1 << 28 }; /* --rows and --len, and the shapes of --input files */

typedef struct {
	const char *name, *path;
} NamedPath;

typedef struct {
	const char *command;
	CheckOpts check;
	Define defs[MAX_DEFINES], params[MAX_DEFINES];
	int ndefs, nparams;
	int json, proof, strict;
	char **specs;
	int nspecs;
	/* run */
	const char *device;
	int rows, len;
	int rows_given, len_given; /* by --rows, --len (not the defaults) */
	int heads, kv_heads; /* attention: query heads, key/value heads (0: 1, and as many as heads) */
	int page_size, batch; /* attention over a paged key/value cache (paged.h); 0: not paged */
	RunOpts run;
	int mpi; /* run: positions shared out to the MPI ranks (run_mpi.c) */
	const char *mpi_collective; /* run --mpi: "gather" (the default) or "reduce" */
	NamedPath inputs[MAX_FILES], outputs[MAX_FILES];
	int ninputs, noutputs;
	/* emit */
	const char *target, *out, *arch, *header;
	int stats, trust_merge, explain;
	/* explore */
	int budget; /* seconds of search; 0: explore's default */
} Opts;

/* Print "assoc: <message>" and the pointer to --help; returns EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An input file's content that the run cannot take: usage_error's exit
 * status, without its pointer to --help, which says nothing of data. */
int input_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "assoc: PATH: cannot write: why" (of, where given, saying why where
 * errno err does not), naming the folder where it is the folder that
 * refuses (an output is made beside its file, then renamed). */
void cli_write_error(const char *path, int err, const OutFile *of);
/* ", H heads on G key/value heads" where there are several heads, else
 * "": the clause of run's and bench's headers, into buf. */
const char *cli_heads_clause(char *buf, size_t n, int heads, int kv_heads);
/* 1 (with a message) when c is a loop spec without a merge. */
/* Whether two paths name one file: the same file where both exist, else
 * the same name in the same folder however it is spelled. */
int cli_same_file(const char *a, const char *b);
/* EXIT_USAGE after a message when the output path names one of the files
 * the command reads (a spec, an --input): writing it would destroy the
 * input; else EXIT_OK. */
int cli_output_not_input(const Opts *o, const char *what, const char *path);
/* The same, its message in msg instead of on standard error. */
int cli_loop_msg(const Carrier *c, char *msg, size_t n);
int cli_loop_only(const Carrier *c);
/* Load a spec with the command line's -D, printing diagnostics; NULL on
 * error, and for a loop spec without a merge. */
Carrier *cli_load(const Opts *o, const char *path);
/* Each --param of a float type held as given: one its type would hold as
 * 0 or as infinity (1e-46, 1e39 for f32) is refused, said with the value
 * as written.  EXIT_OK, or EXIT_USAGE said. */
int cli_params_fit(const Opts *o, const Carrier *c);
/* cli_load that also takes a loop spec (for `assoc explore`). */
Carrier *cli_load_any(const Opts *o, const char *path);
/* The run's arrays as the command line shapes them (--rows, --len, --heads,
 * --kv-heads), drawn from --seed with --param; NULL after an error, said
 * (a usage error, or a param value refused, with no pointer to --help). */
RunData *cli_drawn(const Opts *o, Carrier *c);
/* --heads and --kv-heads (1 when not given, kv as many as heads), or
 * EXIT_USAGE after a message when heads is not a multiple of kv. */
int cli_heads(const Opts *o, int *heads, int *kv);
/* The carrier's verdict (verdict.h) with vo's trials and the command
 * line's --param, before emit or run: EXIT_OK to go on (after a warning
 * on standard error for a law the prover leaves unknown, or for a failure
 * that --trust-merge overrides); EXIT_FAIL for a failed law or reference
 * without --trust-merge, EXIT_USAGE for a bad --param, each with msg
 * ("...; refusing to <refused> (--trust-merge to do it anyway)").  doing:
 * "emitting", "running". */
int cli_verdict(Carrier *c, const Opts *o, VerdictOpts *vo, const char *doing, const char *refused, char *msg,
		size_t n);
/* EXIT_USAGE after a message when copies x the arrays of the command
 * line's shape would not fit in this machine's memory; else 0. */
int cli_fits(const Opts *o, const Carrier *c, int copies);
/* EXIT_USAGE after a message when the shape is empty: nothing to time. */
int cli_bench_shape(const Opts *o);
/* An explicit --split past the len positions there are to split (the
 * longest sequence's keys of a paged batch) set to len, with a note, as
 * --config's split is (cuda_config_split): the same on every device. */
void cli_split_fit(Opts *o, int len);
/* --input files: read into arr (MAX_FILES of them, zeroed), with the
 * shape (o->rows, o->len) taken from them; then cli_inputs_load copies
 * them into d's arrays, checking each one's shape.  0, or EXIT_USAGE after
 * a message.  cli_inputs_free frees arr. */
int cli_inputs_read(Opts *o, Carrier *c, Npy *arr);
int cli_inputs_load(const Opts *o, RunData *d, const Npy *arr);
/* One --input file's values into buf, the array of input name, whose
 * shape the caller has checked: as cli_inputs_load takes them (bits as
 * they are, other dtypes converted with a note or refused). */
int cli_npy_into(const char *path, const char *name, const Npy *a, Buffer *buf);

/* Value x of a as an input of kind reads it: a uint16 or uint8 file holds
 * the bit patterns of a bf16 or f16, or f8e4m3, input; for any other kind
 * it holds unsigned integers. */
double cli_npy_value(const Npy *a, size_t x, TyKind kind);
void cli_inputs_free(Npy *arr);

/* A progress line on standard error for work that may take a while
 * (trials, interpreter runs, compiles, the comparison with the reference):
 * when standard error is a terminal and the work goes on past 2 s
 * ($ASSOC_PROGRESS_AFTER seconds where set), "  what
 * ... N s", rewritten in place every half second; nothing in a pipe or a
 * file.  cli_busy_done clears it (before anything else is printed);
 * another cli_busy ends the one before. */
void cli_busy(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_busy_done(void);

/* A run's comparison with the reference: a line an output (its errors,
 * or that no value was compared, by size or at all, and why), then ok or
 * FAILED.  run and run --page-size print it alike. */
void cli_print_check(const RunCheck *rc);
/* The carrier's verdict before a run, on the few trials a run takes. */
int cli_run_verdict(Carrier *c, const Opts *o);
/* The same before another command that runs the carrier: doing and
 * refused as cli_verdict takes them ("benchmarking", "time it"). */
int cli_run_verdict_as(Carrier *c, const Opts *o, const char *doing, const char *refused);
/* A run's steps once its inputs are ready, for run and run --page-size:
 * dv usable here, then the carrier's verdict, then step(ctx) under the
 * busy line `what`, timed into *sec (where step leaves it below 0: step
 * may time its own part), a failure printed with step's msg as dv's.
 * EXIT_OK when step ran, else the exit status. */
typedef int (*CliRunStep)(void *ctx, double *sec, char *msg, size_t n);
int cli_run_step(Carrier *c, const Opts *o, const Device *dv, const char *what, CliRunStep step, void *ctx,
		 double *sec);
/* run --page-size: a batch of sequences over a paged key/value cache on
 * dv (cmd_paged.c); an exit status. */
int cmd_paged_run(Opts *o, Carrier *c, const Device *dv);
/* bench --page-size on the cpu device: the sequences' runs against a copy
 * of the bytes of K and V they read; on the gpu (gpubench.c), p's batch
 * in one launch against a copy moving as many bytes as it reads and
 * writes (its keys those the sequences read). */
int cmd_paged_bench(Opts *o);
int cmd_paged_bench_gpu(Opts *o, Paged *p);

int cmd_check(Opts *o);
int cmd_run(Opts *o);
int cmd_emit(Opts *o);
int cmd_bench(Opts *o);
int cmd_explore(Opts *o);
int cmd_tune(Opts *o);
int cmd_bench_gpu(Opts *o); /* bench --device gpu */

#endif
