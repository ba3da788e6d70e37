/*
 * mpi_nonblocking_floor.c -- what Open MPI itself takes for one collective when it is started
 * with its non-blocking call and completed by polling MPI_Test, which is how the mpi
 * transport runs its native collectives (comm/mpi/collectives.h): the floor under our figure,
 * next to the blocking call of the peer benchmark (../shared/peers/mpi_allreduce_bench.c).
 *
 * Timing as that peer's "osu" row: every call timed on its own, an untimed MPI_Barrier between
 * calls, per-rank means averaged over ranks. On a 2-rank communicator the AllReduce asks
 * libnbc for its ring, as the transport does (the MPI tool interface's
 * coll_libnbc_iallreduce_algorithm). float32 sums; sizes in the peer's convention (bytes of
 * the send buffer; for allgather the gathered buffer).
 *
 * Usage: mpi_nonblocking_floor [-o allreduce|allgather|reduce_scatter|bcast|alltoall]
 *                              [-s size[,size...]] [-t seconds_per_size]
 * Output: "RESULT,op,nonblocking,np,bytes,iters,avg_us" per size, after a HEADER line.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op_kind { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCE_SCATTER, OP_BCAST, OP_ALLTOALL };
static const char *op_names[] = {"allreduce", "allgather", "reduce_scatter", "bcast", "alltoall"};

static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024.0;
  else if (*end == 'M' || *end == 'm') v *= 1024.0 * 1024.0;
  return (size_t)v;
}

static void start(enum op_kind op, float *s, float *r, int count, int np, MPI_Request *q) {
  switch (op) {
    case OP_ALLREDUCE: MPI_Iallreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, q); break;
    case OP_ALLGATHER: MPI_Iallgather(s, count / np, MPI_FLOAT, r, count / np, MPI_FLOAT, MPI_COMM_WORLD, q); break;
    case OP_REDUCE_SCATTER:
      MPI_Ireduce_scatter_block(s, r, count / np, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, q);
      break;
    case OP_BCAST: MPI_Ibcast(s, count, MPI_FLOAT, 0, MPI_COMM_WORLD, q); break;
    case OP_ALLTOALL: MPI_Ialltoall(s, count / np, MPI_FLOAT, r, count / np, MPI_FLOAT, MPI_COMM_WORLD, q); break;
  }
}

static void run_op(enum op_kind op, float *s, float *r, int count, int np) {
  MPI_Request q;
  int done = 0;
  start(op, s, r, count, np, &q);
  while (!done) MPI_Test(&q, &done, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
  int rank, np, provided, i;
  enum op_kind op = OP_ALLREDUCE;
  char sizes[512] = "4K,64K,1M,16M";
  double budget = 0.4;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc) {
      const char *o = argv[++i];
      int k, found = 0;
      for (k = 0; k < 5; k++)
        if (!strcmp(o, op_names[k])) op = (enum op_kind)k, found = 1;
      if (!found) {
        if (!rank) fprintf(stderr, "unknown op %s\n", o);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
      snprintf(sizes, sizeof sizes, "%s", argv[++i]);
    } else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
      budget = atof(argv[++i]);
    } else {
      if (!rank) fprintf(stderr, "usage: %s [-o op] [-s sizes] [-t sec]\n", argv[0]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  /* The transport's choice for 2-rank AllReduce: libnbc's ring (comm/mpi/collectives.h). */
  MPI_T_init_thread(MPI_THREAD_SERIALIZED, &provided);
  int index, count_cvar, ring = 1;
  MPI_T_cvar_handle h;
  if (np == 2 && MPI_T_cvar_get_index("coll_libnbc_iallreduce_algorithm", &index) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, NULL, &h, &count_cvar) == MPI_SUCCESS)
    MPI_T_cvar_write(h, &ring);

  if (!rank) printf("HEADER,op,timing,np,bytes,iters,avg_us\n");
  char *save = NULL, *tok;
  for (tok = strtok_r(sizes, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    size_t bytes = parse_size(tok), count = bytes / sizeof(float);
    count -= count % np;
    bytes = count * sizeof(float);
    float *s = calloc(count + 16, sizeof(float)), *r = calloc(count + 16, sizeof(float));
    for (i = 0; i < 10; i++) run_op(op, s, r, (int)count, np);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), t1, tmax;
    run_op(op, s, r, (int)count, np);
    t1 = MPI_Wtime() - t0;
    MPI_Allreduce(&t1, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    long iters = (long)(budget / (tmax > 1e-7 ? tmax : 1e-7)), it;
    if (iters < 3) iters = 3;
    if (iters > 10000) iters = 10000;
    double acc = 0, mean, sum;
    MPI_Barrier(MPI_COMM_WORLD);
    for (it = 0; it < iters; it++) {
      t0 = MPI_Wtime();
      run_op(op, s, r, (int)count, np);
      acc += MPI_Wtime() - t0;
      MPI_Barrier(MPI_COMM_WORLD);
    }
    mean = acc / iters;
    MPI_Reduce(&mean, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (!rank) printf("RESULT,%s,nonblocking,%d,%zu,%ld,%.3f\n", op_names[op], np, bytes, iters, sum / np * 1e6);
    fflush(stdout);
    free(s);
    free(r);
  }
  MPI_T_finalize();
  MPI_Finalize();
  return 0;
}
