#!/usr/bin/python3
"""mpi4py-fft baseline for the head-to-head comparison (experiments/fft_head_to_head.sh).

PFFT(comm, shape, dtype=float64, grid=..., backend='fftw') with mpi4py-fft's defaults otherwise
(FFTW_MEASURE serial plans, normalisation on forward), timed with the testbed's method:
inner loops of 3 forward+backward pairs, up to 50 outer repetitions with a barrier before each,
the inner loop's time reduced with MAX over ranks; reports the fastest / 3 and the median.
Verifies the round trip. Run under the Open MPI that Debian's mpi4py is built with:

    mpiexec -n 2 /usr/bin/python3 experiments/mpi4py_fft_bench.py --shape 128,128,128
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI
from mpi4py_fft import PFFT, newDistArray


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="64,64,64", help="global real shape, comma separated")
    parser.add_argument("--grid", default="slab", choices=["slab", "pencil"],
                        help="slab: grid (-1,), pencil: (-1, -1)")
    parser.add_argument("--kind", default="r2c", choices=["r2c", "c2c"])
    parser.add_argument("--inner", type=int, default=3)
    parser.add_argument("--outer", type=int, default=50)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument("--min-outer", type=int, default=5)
    parser.add_argument("--json", help="write the result as JSON (rank 0)")
    args = parser.parse_args()

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    shape = [int(x) for x in args.shape.split(",")]
    grid = (-1,) if args.grid == "slab" else (-1, -1)
    dtype = np.float64 if args.kind == "r2c" else np.complex128

    comm.Barrier()
    t0 = MPI.Wtime()
    fft = PFFT(comm, shape, dtype=dtype, grid=grid, backend="fftw")
    plan_s = comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX)
    u = newDistArray(fft, False)
    u_hat = newDistArray(fft, True)
    back = newDistArray(fft, False)
    rng = np.random.default_rng(12345 + rank)
    if args.kind == "r2c":
        u[...] = rng.uniform(-1.0, 1.0, u.shape)
    else:
        u[...] = rng.uniform(-1.0, 1.0, u.shape) + 1j * rng.uniform(-1.0, 1.0, u.shape)

    # Verify the round trip.
    u_hat = fft.forward(u, u_hat)
    back = fft.backward(u_hat, back)
    err = comm.allreduce(float(np.max(np.abs(back - u))) if back.size else 0.0, op=MPI.MAX)
    verified = err < 1e-10

    samples = []
    spent = 0.0
    for rep in range(args.outer):
        comm.Barrier()
        t = MPI.Wtime()
        for _ in range(args.inner):
            fft.forward(u, u_hat)
            fft.backward(u_hat, back)
        t = comm.allreduce(MPI.Wtime() - t, op=MPI.MAX)
        samples.append(t / args.inner)
        spent += t
        if args.max_seconds > 0 and spent > args.max_seconds and rep + 1 >= args.min_outer:
            break

    if rank == 0:
        fastest, median = min(samples), statistics.median(samples)
        print(f"mpi4py-fft  {'x'.join(map(str, shape))} {args.kind} double, grid {args.grid} "
              f"({comm.Get_size()} ranks), backend fftw")
        print(f"  verified {'yes' if verified else 'FAILED'} (round trip {err:.1e}); plan {plan_s:.2f} s")
        print(f"  forward+backward: fastest {fastest * 1e3:.3f} ms, median {median * 1e3:.3f} ms "
              f"({args.inner} inner x {len(samples)} outer, MAX over ranks)")
        if args.json:
            import mpi4py
            import mpi4py_fft
            result = {"tool": "mpi4py-fft", "method": "mpi4py-fft", "kind": args.kind, "precision": "double",
                      "global_shape": "x".join(map(str, shape)), "grid": args.grid, "verified": verified,
                      "inner": args.inner, "outer": len(samples), "fastest_s": fastest, "median_s": median,
                      "plan_s": plan_s, "samples_s": samples}
            meta = {"ranks": comm.Get_size(), "mpi_library": MPI.Get_library_version().splitlines()[0],
                    "mpi4py": mpi4py.__version__, "mpi4py_fft": mpi4py_fft.__version__, "numpy": np.__version__,
                    "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            with open(args.json, "w") as f:
                json.dump({"metadata": meta, "results": [result]}, f, indent=2)
    return 0 if verified else 1


if __name__ == "__main__":
    sys.exit(main())
