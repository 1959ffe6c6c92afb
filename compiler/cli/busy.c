/* busy.c: the progress line of work that takes a while (cli.h). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "compiler/cli/cli.h"

/* Seconds before the line shows: 2, or $ASSOC_PROGRESS_AFTER (0 shows
 * it at the first tick, half a second in). */
static double show_after(void)
{
	const char *e = getenv("ASSOC_PROGRESS_AFTER");
	char *end;
	double s = e && *e ? strtod(e, &end) : 2;
	return e && *e && !*end && s >= 0 ? s : 2;
}

static struct {
	pthread_mutex_t m;
	pthread_cond_t cv;
	pthread_t t;
	int on, started;
	char what[160];
	struct timespec t0;
} B = {.m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) + 1e-9 * (t.tv_nsec - t0->tv_nsec);
}

/* Every half second: the line rewritten in place once the work has gone on
 * show_after() seconds; cleared at the end, so that what follows starts on
 * a clean line. */
static void *ticker(void *arg)
{
	(void)arg;
	int width = 0;
	double after = show_after();
	pthread_mutex_lock(&B.m);
	while (B.on) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 500000000L;
		if (until.tv_nsec >= 1000000000L)
			until.tv_sec++, until.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&B.cv, &B.m, &until);
		double s = since(&B.t0);
		if (B.on && s >= after) {
			int w = fprintf(stderr, "\r  %s ... %.0f s", B.what, s);
			width = w > width ? w : width;
			fflush(stderr);
		}
	}
	if (width)
		fprintf(stderr, "\r%*s\r", width, "");
	pthread_mutex_unlock(&B.m);
	return NULL;
}

void cli_busy(const char *fmt, ...)
{
	cli_busy_done();
	if (!isatty(2))
		return; /* a pipe or a file gets the results alone */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(B.what, sizeof B.what, fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_MONOTONIC, &B.t0);
	B.on = 1;
	B.started = !pthread_create(&B.t, NULL, ticker, NULL);
}

void cli_busy_done(void)
{
	if (!B.started)
		return;
	pthread_mutex_lock(&B.m);
	B.on = 0;
	pthread_cond_signal(&B.cv);
	pthread_mutex_unlock(&B.m);
	pthread_join(B.t, NULL);
	B.started = 0;
}
