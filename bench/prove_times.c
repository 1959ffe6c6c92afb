/* prove_times.c: time the symbolic prover on each spec given (best of N runs). */
#include <stdio.h>
#include <stdlib.h>

#include "compiler/prove/prove.h"

int main(int argc, char **argv)
{
	int runs = 5;
	printf("%-36s %10s  %s\n", "spec", "seconds", "verdicts");
	for (int i = 1; i < argc; i++) {
		Diag d;
		diag_init(&d, argv[i]);
		Carrier *c = spec_load_file(argv[i], NULL, 0, &d);
		if (!c) {
			fprintf(stderr, "%s", d.text ? d.text : "load failed\n");
			diag_free(&d);
			return 1;
		}
		diag_free(&d);
		double best = 1e9;
		char verdicts[256] = "";
		for (int r = 0; r < runs; r++) {
			ProofReport rep;
			if (prove_carrier(c, 0, &rep) < 0)
				return 1;
			if (rep.seconds < best)
				best = rep.seconds;
			int n = 0;
			for (int k = 0; k < rep.n; k++)
				n += snprintf(verdicts + n, sizeof verdicts - n, "%s%s %s", k ? ", " : "",
					      rep.line[k].law, prove_status_name(rep.line[k].status));
			prove_report_free(&rep);
		}
		printf("%-36s %10.4f  %s\n", argv[i], best, verdicts);
		spec_carrier_free(c);
	}
	return 0;
}
