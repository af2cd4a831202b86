#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* MPI_Alltoallv of MPI_BYTE between 2 ranks, peer block only (self count 0), message sizes L and L+8;
   median of 200 timed calls (barrier before each), slowest rank. */
static double run(int bytes, int fresh, char* s, char* r, int rank) {
  int sc[2] = {0, 0}, rc[2] = {0, 0}, sd[2] = {0, 0}, rd[2] = {0, 0};
  sc[1 - rank] = rc[1 - rank] = bytes;
  double t[200];
  for (int i = 0; i < 210; ++i) {
    if (fresh) memset(s, i, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Alltoallv(s, sc, sd, MPI_BYTE, r, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
    double d = MPI_Wtime() - t0, m;
    MPI_Allreduce(&d, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i >= 10) t[i - 10] = m;
  }
  for (int i = 0; i < 200; ++i) for (int j = i + 1; j < 200; ++j) if (t[j] < t[i]) { double x = t[i]; t[i] = t[j]; t[j] = x; }
  return t[100];
}
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char* s = aligned_alloc(4096, 1 << 20); char* r = aligned_alloc(4096, 1 << 20);
  memset(s, 1, 1 << 20); memset(r, 0, 1 << 20);
  if (rank == 0) printf("%8s %10s %10s %10s %10s (us)\n", "L", "L", "L+8", "L fresh", "L+8 fresh");
  for (int L = 4096; L <= 131072; L *= 2) {
    double a = run(L, 0, s, r, rank), b = run(L + 8, 0, s, r, rank), c = run(L, 1, s, r, rank), d = run(L + 8, 1, s, r, rank);
    if (rank == 0) printf("%8d %10.2f %10.2f %10.2f %10.2f\n", L, a * 1e6, b * 1e6, c * 1e6, d * 1e6);
  }
  MPI_Finalize();
}
