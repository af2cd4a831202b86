# Sourced by the experiment scripts (run from the repository root): the tools folder and a
# 2-rank launcher for one MPI build, building it first when a needed tool is missing.
#   tb_launcher <mpich|openmpi> <tool> <usage>   sets bin (build/<mpi>/bin) and run (an array)
tb_launcher() {
  case $1 in
    mpich) run=(mpiexec.mpich -n 2) ;;
    openmpi) run=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpiexec.openmpi -n 2) ;;
    *) echo "usage: $3" >&2; exit 2 ;;
  esac
  bin=build/$1/bin
  [ -x "$bin/$2" ] || ./scripts/build.sh "$1"
}
