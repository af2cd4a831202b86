# make_bundle.sh (run here, Debian 12)
#!/usr/bin/env bash
# Packs what the device machine needs to run the testbed's tools built here (Debian 12 binaries):
# Debian's MPICH and its libraries, UCX modules, the patched MPICH install, the tools stripped.
set -euo pipefail
cd /work/main
key=$(basename "$(dirname "$(cat build/mpich-patched/tb-mpich-prefix)")")
b=/tmp/tb-bundle; rm -rf $b; mkdir -p $b/deb-lib $b/fallback $b/ucx $b/bin $b/patched/bin $b/patched/lib
for l in libmpich.so.12 libucp.so.0 libucs.so.0 libuct.so.0 libucm.so.0 libhwloc.so.15 libnuma.so.1 libudev.so.1 \
         libfftw3.so.3 libfftw3f.so.3 libbenchmark.so.1debian; do
  cp -L /usr/lib/x86_64-linux-gnu/$l $b/deb-lib/
done
cp -L /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 $b/fallback/
cp -L /usr/lib/x86_64-linux-gnu/ucx/libuct_cma.so.0 $b/ucx/libuct_cma.so.0; ln -s libuct_cma.so.0 $b/ucx/libuct_cma.so
p=$(cat build/mpich-patched/tb-mpich-prefix)
cp $p/bin/mpiexec.hydra $p/bin/hydra_pmi_proxy $b/patched/bin/; ln -s mpiexec.hydra $b/patched/bin/mpiexec
cp -P $p/lib/libmpi.so* $b/patched/lib/
printf '#!/bin/sh\nexec %s "$@"\n' /opt/tb/patched/bin/mpiexec.hydra > $b/bin/mpiexec.mpich; chmod +x $b/bin/mpiexec.mpich
for v in mpich mpich-patched; do
  mkdir -p $b/build/$v/bin $b/build/$v/lib
  for t in tb-redistribute tb-bench tb-fft; do cp build/$v/bin/$t $b/build/$v/bin/; done
  cp build/$v/lib/*.so $b/build/$v/lib/
  strip --strip-unneeded $b/build/$v/bin/* $b/build/$v/lib/*.so
done
cp build/mpich-patched/tb-mpich-prefix $b/build/mpich-patched/
echo "$key" > $b/key
tar -C /tmp -cJf .devrun/bundle.tar.xz tb-bundle
ls -la .devrun/bundle.tar.xz; du -sh $b

# device_run.sh (the device, run 1)
#!/usr/bin/env bash
# One prepared run on the 16-core device machine: the testbed's tools (built on Debian 12 here)
# at 4, 8 and 16 ranks. Everything goes to $OUT as it is made.
set -uo pipefail
start=$(date +%s)
R=/tmp/res; mkdir -p $R
log() { echo "[$(( $(date +%s) - start ))s] $*" | tee -a $OUT/progress.log; tar -C /tmp -czf $OUT/results.tar.gz res; }
mkdir -p /opt && tar -C /opt -xJf .devrun/bundle.tar.xz && mv /opt/tb-bundle /opt/tb
key=$(cat /opt/tb/key)
[ -e /var/cache/tb-mpich/$key/install ] || mkdir -p /var/cache/tb-mpich/$key && [ -e /var/cache/tb-mpich/$key/install ] || ln -sfn /opt/tb/patched /var/cache/tb-mpich/$key/install
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
mkdir -p build && cp -r /opt/tb/build/* build/
export PATH=/opt/tb/bin:$PATH LD_LIBRARY_PATH=/opt/tb/deb-lib UCX_MODULE_DIR=/opt/tb/ucx
build/mpich/bin/tb-redistribute --help >/dev/null 2>&1 || export LD_LIBRARY_PATH=/opt/tb/deb-lib:/opt/tb/fallback
{ uname -a; cat /etc/os-release | head -2; ldd --version | head -1; nproc; lscpu; free -g; cat /proc/loadavg;
  pwd; ls -la /work; ldd build/mpich/bin/tb-redistribute build/mpich-patched/bin/tb-redistribute; } > $R/machine.txt 2>&1
log "smoke"
timeout 60 mpiexec.mpich -n 2 build/mpich/bin/tb-redistribute --shape 32,32,32 --method all --outer 1 > $R/smoke.txt 2>&1; log "smoke debian rc=$?"
timeout 60 /opt/tb/patched/bin/mpiexec -n 4 build/mpich-patched/bin/tb-redistribute --shape 32,32,32 --method native --outer 1 >> $R/smoke.txt 2>&1; log "smoke patched rc=$?"
export PYTHONUNBUFFERED=1
phase() {  # phase CAP NAME run.py args...
  local cap=$1 name=$2; shift 2
  log "phase $name (cap ${cap}s)"
  timeout $cap python3 experiments/run.py "$@" ${TB_DEVTEST_ARGS:+--args "$TB_DEVTEST_ARGS"} --timeout 90 >> $R/run.log 2>&1; log "phase $name rc=$?"
}
phase 170 redistribute experiments/definitions/many_core_redistribute.json --mpi mpich --store $R/redistribute.jsonl
phase 60 mpich-debian experiments/definitions/many_core_mpich.json --mpi mpich --store $R/mpich.jsonl
phase 130 mpich-patched experiments/definitions/many_core_mpich.json --mpi mpich-patched --store $R/mpich.jsonl
for r in 1 2 3; do
  phase 40 slab2-r$r-debian experiments/definitions/mpich_slab.json --mpi mpich --store $R/slab2.r$r.jsonl
  phase 40 slab2-r$r-patched experiments/definitions/mpich_slab.json --mpi mpich-patched --store $R/slab2.r$r.jsonl
done
phase 100 sizes16 experiments/definitions/many_core_sizes.json --mpi mpich --store $R/sizes16.jsonl
log "done; load $(cat /proc/loadavg)"

# run 2 (the device, same machine): the 2-rank slab again with --outer 10 --max-seconds 5
for r in 1 2 3; do for m in mpich mpich-patched; do python3 experiments/run.py experiments/definitions/mpich_slab.json --mpi $m --store $R/slab2.r$r.jsonl --args '{"--outer": "10", "--max-seconds": "5"}' --timeout 90; done; done

# device_run2.sh (the device, run 3; tb-model copied into build/mpich/bin first)
#!/usr/bin/env bash
# Second device run: a tuning table at 16 ranks (one node), then every algorithm and auto with it.
set -uo pipefail
N=${TB_DEV_RANKS:-16}; SIZES=${TB_DEV_SIZES:-64:1M}
R=/tmp/res3; mkdir -p $R; start=$(date +%s)
log() { echo "[$(( $(date +%s) - start ))s] $*" | tee -a $R/progress.log; tar -C /tmp -czf $OUT/auto16.tar.gz res3; }
[ -d /opt/tb ] || source .devrun/setup.sh
export PATH=/opt/tb/bin:$PATH LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-/opt/tb/deb-lib} UCX_MODULE_DIR=/opt/tb/ucx PYTHONUNBUFFERED=1
log "tune $N ranks"
timeout ${TB_DEV_TUNE_CAP:-170} python3 experiments/tune.py --ranks $N --nodes 1 -m $SIZES --layouts contiguous,vector64 \
  --min-time 0.005 --repetitions 3 --launches 2 --tolerance 0.1 -o $R/tuning.json --mpich-json $R/mpich-selection.json --timeout 120 > $R/tune.log 2>&1; log "tune rc=$?"
head -c 600 $R/tuning.json >> $R/progress.log
table=$R/tuning.json
log "auto run with $table"
TB_TUNING_TABLE=$table timeout ${TB_DEV_RUN_CAP:-120} mpiexec.mpich -n $N build/mpich/bin/tb-bench -m $SIZES --algorithms all \
  --layouts contiguous,vector64,slab --interleave --passes 3 --benchmark_min_time=0.005 \
  --benchmark_out=$R/auto16.json --benchmark_out_format=json > $R/auto16.txt 2>&1; log "auto rc=$?"
log "done; load $(cat /proc/loadavg)"

# run 4 (the device): mpich/bench.sh at 16 ranks
TB_BENCH_OUT=/tmp/b16 TB_BENCH_ROUNDS=3 TB_BENCH_PASSES=3 TB_BENCH_SIZES=64:1M TB_BENCH_MIN_TIME=0.005 mpich/bench.sh 16

# run 5 (the device): the campaign's points at 16 and 4 ranks (mpich-campaign-4-16-first.jsonl.gz)
for n in 16 4; do for mpi in mpich-patched mpich; do
  python3 experiments/run.py experiments/definitions/mpich_algorithms.json --mpi $mpi --mode intra \
    --ranks $n --store $R/store.jsonl --args '{"-m": "1:1M", "--benchmark_min_time": "0.01"}' --timeout 120
done; done
# run 6 (the device): the same at 8, 16 and 4 ranks (mpich-campaign-4-8-16.jsonl.gz)
for n in 8 16 4; do for mpi in mpich-patched mpich; do
  python3 experiments/run.py experiments/definitions/mpich_algorithms.json --mpi $mpi --mode intra \
    --ranks $n --store $R/store-$n.jsonl --args '{"-m": "1:1M", "--benchmark_min_time": "0.01"}' --timeout 60
done; done
# here: the selection file (generic.json from the patched MPICH's source tree)
cp mpich/tuning/alltoallw.json /tmp/shipped-before.json
zcat docs/results/2026-12-04-many-core-16/mpich-campaign-4-8-16.jsonl.gz > /tmp/c9all.jsonl
/usr/bin/python3 analysis/mpich_algorithms.py /tmp/c9all.jsonl --selection-json mpich/tuning/alltoallw.json \
  --generic /var/cache/tb-mpich/d59eed5fd992e81a/src/maint/tuning/coll/mpir/generic.json --merge /tmp/shipped-before.json
