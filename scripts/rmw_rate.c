// The rate at which one core updates rows in memory, the work CDMoE's
// expert backward is made of: row[j] += a·x[j] for a row of 64 floats
// (eight AVX2 vectors), the row drawn at random from R rows, as each
// chosen expert updates its rows of dEdown and dEup and each choice the
// token's dφ. Prints, for each R, the best of five passes over 2^20
// updates, in ns per row and in cycles per 8-float vector, at the clock
// measured by a chain of dependent adds (one per cycle).
//
//   gcc -O3 -o /tmp/rmw_rate scripts/rmw_rate.c && taskset -c 0 /tmp/rmw_rate
//
// R = 1 is one row updated over and over: each update waits for the last
// through store-to-load forwarding. R of 16 to 64 rows stay in the
// first-level cache and rarely repeat; 1024 and 4096 rows (256 KB, 1 MB)
// do not fit in it. docs/performance.md quotes its figures.
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// clock_ghz times a chain of dependent adds, one per cycle: the fastest
// of three, the first warming the core up to its clock.
static double clock_ghz(void) {
	const long n = 400000000;
	double best = 0;
	for (int k = 0; k < 3; k++) {
		long x = 0;
		double t0 = seconds();
		for (long i = 0; i < n; i++) __asm__ volatile("add $1, %0" : "+r"(x));
		double ghz = (double)n / (seconds() - t0) / 1e9;
		best = ghz > best ? ghz : best;
	}
	return best;
}

__attribute__((target("avx2,fma"), noinline)) static void update(float *rows, const float *x, const int *pick,
                                                                  int n, float a) {
	for (int i = 0; i < n; i++) {
		float *r = rows + (ptrdiff_t)pick[i] * 64;
#pragma GCC ivdep
		for (int j = 0; j < 64; j++) r[j] += a * x[j];
	}
}

int main(void) {
	const int n = 1 << 20, most = 4096;
	float *rows = aligned_alloc(4096, (size_t)most * 64 * sizeof(float));
	float *x = aligned_alloc(64, 64 * sizeof(float));
	int *pick = malloc((size_t)n * sizeof(int));
	if (!rows || !x || !pick) {
		fprintf(stderr, "rmw_rate: out of memory\n");
		return 1;
	}
	for (int j = 0; j < 64; j++) x[j] = 1e-6f;
	for (int i = 0; i < most * 64; i++) rows[i] = 0;
	const double ghz = clock_ghz();
	printf("clock about %.2f GHz\n", ghz);
	const int counts[] = {1, 2, 16, 64, 1024, 4096};
	for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
		srand(1);
		for (int i = 0; i < n; i++) pick[i] = rand() % counts[c];
		double best = 1e30;
		for (int pass = 0; pass < 5; pass++) {
			double t0 = seconds();
			update(rows, x, pick, n, 0.5f);
			double ns = (seconds() - t0) * 1e9 / n;
			best = ns < best ? ns : best;
		}
		printf("R %4d rows: %.2f ns per row, %.2f cycles per vector\n", counts[c], best, best * ghz / 8);
	}
	return 0;
}
