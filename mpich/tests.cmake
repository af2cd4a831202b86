# Tests only the mpich-patched variant has (included from tests/CMakeLists.txt when
# TB_MPICH_PATCHED is on; the CMake preset mpich-patched sets it). The MPI library is the install
# mpich/build.sh made: <cache>/<key>/install, with the patched source tree beside it in
# <cache>/<key>/src.
#
#   mpich.<test>.<algorithm>.np<N>   MPICH's own alltoallw tests (test/mpi/coll of the 4.0.2 tree), 1-8 ranks
#                                    with the algorithm forced by MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM
#   mpich.cvar.*                     evidence that the CVAR selects the added algorithms
#   mpich.library.*                  the tests load the patched libmpi, and it says which it is
#   test_conformance.native_<algorithm>.np<N>
#                                    the testbed's conformance suite with `native` (MPI_Alltoallw)
#                                    running the forced algorithm
#   *.node_leader_cliques2.np<N>     the same for node_leader on two emulated nodes
#                                    (MPIR_CVAR_NUM_CLIQUES=2: ranks dealt round-robin to 2 nodes)
#   mpich.node_leader.copy-stores.*  node_leader's copies with and without streaming stores, checked
#                                    against the global index of each element (tb-redistribute)
#   mpich.series.round-trip          mpich/series.sh: the series as git commits and back, byte for byte
#
# The algorithms the patch series (mpich/patches) adds to MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM:
set(TB_MPICH_ALGORITHMS pairwise pack_alltoallv node_leader)

get_filename_component(tb_mpicc "${MPI_C_COMPILER}" REALPATH)
get_filename_component(tb_bindir "${tb_mpicc}" DIRECTORY)
get_filename_component(TB_MPICH_PREFIX "${tb_bindir}" DIRECTORY)
get_filename_component(tb_mpich_key_dir "${TB_MPICH_PREFIX}" DIRECTORY)
set(tb_mpich_tests "${tb_mpich_key_dir}/src/test/mpi")
if(NOT EXISTS "${tb_mpich_tests}/util/mtest.c" OR NOT EXISTS "${TB_MPICH_PREFIX}/lib/libmpi.so")
  message(FATAL_ERROR "mpich-patched: ${MPI_C_COMPILER} is not an install made by mpich/build.sh "
                      "(expected ${TB_MPICH_PREFIX}/lib/libmpi.so and the source tree ${tb_mpich_tests}); "
                      "build with scripts/build.sh mpich-patched")
endif()
message(STATUS "mpich-patched: MPICH install ${TB_MPICH_PREFIX}, its tests from ${tb_mpich_tests}")

# MPICH's test harness (MTest_Init/MTest_Finalize print " No Errors") and the tests themselves, as
# MPICH's test/mpi/coll/Makefile.am builds them; their warnings are MPICH's, not ours.
# (libmtest + libmtest_single, as test/mpi/Makefile_single.mtest links them.)
add_library(tb_mpich_mtest STATIC ${tb_mpich_tests}/util/mtest.c ${tb_mpich_tests}/util/mtest_common.c
                                  ${tb_mpich_tests}/util/mtest_single.c)
target_include_directories(tb_mpich_mtest PUBLIC ${tb_mpich_tests}/include ${PROJECT_SOURCE_DIR}/mpich/tests)
target_link_libraries(tb_mpich_mtest PUBLIC MPI::MPI_C)
target_compile_options(tb_mpich_mtest PUBLIC -w)
set(tb_mpich_blocking alltoallw1 alltoallw2 alltoallw_zeros)   # MPI_Alltoallw on intracommunicators
foreach(t ${tb_mpich_blocking} p_alltoallw icalltoallw)
  add_executable(mpich_${t} ${tb_mpich_tests}/coll/${t}.c)
  target_link_libraries(mpich_${t} PRIVATE tb_mpich_mtest)
endforeach()
add_executable(mpich_nbicalltoallw ${tb_mpich_tests}/coll/icalltoallw.c)
target_compile_definitions(mpich_nbicalltoallw PRIVATE USE_MTEST_NBC)
target_link_libraries(mpich_nbicalltoallw PRIVATE tb_mpich_mtest)

set(tb_mpirun ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG})
set(tb_expect ${PROJECT_SOURCE_DIR}/mpich/tests/expect.sh)
foreach(algo ${TB_MPICH_ALGORITHMS})
  # The blocking intracommunicator tests run the forced algorithm (their MPI_IN_PLACE calls fall
  # back to MPICH's own choice: the restriction is noinplace and MPIR_CVAR_COLLECTIVE_FALLBACK is
  # silent by default). p_alltoallw (persistent), icalltoallw (intercommunicator) and
  # nbicalltoallw (nonblocking) do not reach MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM; they run with
  # it set to show it does not disturb the other paths.
  foreach(t ${tb_mpich_blocking} p_alltoallw icalltoallw nbicalltoallw)
    set(ranks 1 2 3 4 5 6 7 8)   # above 2 oversubscribed here; these tests are small (about 1 s)
    if(t MATCHES "icalltoallw")
      set(ranks 2 3 4 5 6 7 8)    # an intercommunicator needs two groups
    endif()
    foreach(n ${ranks})
      add_test(NAME mpich.${t}.${algo}.np${n}
               COMMAND ${tb_mpirun} ${n} ${TB_MPIEXEC_FLAGS} $<TARGET_FILE:mpich_${t}>)
      set_tests_properties(mpich.${t}.${algo}.np${n} PROPERTIES TIMEOUT 120 LABELS "mpi;mpich-patched"
                           ENVIRONMENT "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=${algo}"
                           PASS_REGULAR_EXPRESSION "^ No Errors\n"
                           FAIL_REGULAR_EXPRESSION "Found [0-9]+ errors|[Aa]bort|Fatal error")
    endforeach()
  endforeach()
endforeach()
# node_leader across nodes: MPIR_CVAR_NUM_CLIQUES=2 makes MPICH see two nodes (ranks dealt
# round-robin: np3 {0,2}+{1}, np4 {0,2}+{1,3}), so node_comm, node_roots_comm and the leaders'
# aggregated messages are used. (At np1, and at np2 with two cliques, there is no hierarchy and the
# parent-comm restriction falls back: the test below shows it.)
foreach(t ${tb_mpich_blocking})
  foreach(n 3 4)
    add_test(NAME mpich.${t}.node_leader_cliques2.np${n}
             COMMAND ${tb_mpirun} ${n} ${TB_MPIEXEC_FLAGS} $<TARGET_FILE:mpich_${t}>)
    set_tests_properties(mpich.${t}.node_leader_cliques2.np${n} PROPERTIES TIMEOUT 120 LABELS "mpi;mpich-patched"
                         ENVIRONMENT "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=node_leader;MPIR_CVAR_NUM_CLIQUES=2"
                         PASS_REGULAR_EXPRESSION "^ No Errors\n"
                         FAIL_REGULAR_EXPRESSION "Found [0-9]+ errors|[Aa]bort|Fatal error")
  endforeach()
endforeach()

# ---- the CVAR really switches the path -----------------------------------------------------------
add_executable(tb_mpich_cvar_switch ${PROJECT_SOURCE_DIR}/mpich/tests/cvar_switch.c)
target_link_libraries(tb_mpich_cvar_switch PRIVATE MPI::MPI_C)
set(tb_cvar_switch $<TARGET_FILE:tb_mpich_cvar_switch>)
# A truncated receive makes MPI_Alltoallw fail; MPICH's error stack names the function of the
# algorithm that ran. scattered (MPICH's own) is the control: the signal tells algorithms apart.
# The program ends in MPI_ERRORS_ARE_FATAL on purpose (the only way MPICH prints the whole stack).
foreach(algo ${TB_MPICH_ALGORITHMS} scattered)
  set(others ${TB_MPICH_ALGORITHMS} scattered)
  list(REMOVE_ITEM others ${algo})
  list(JOIN others "|" others)
  foreach(n 2 3)
    add_test(NAME mpich.cvar.truncate.${algo}.np${n}
             COMMAND ${tb_expect} --status fail --match "MPIR_Alltoallw_intra_${algo}\\(" --match "cvar_switch: ok"
                     --absent "MPIR_Alltoallw_intra_(${others})\\("
                     -- ${tb_mpirun} ${n} ${TB_MPIEXEC_FLAGS} ${tb_cvar_switch} truncate)
    set_tests_properties(mpich.cvar.truncate.${algo}.np${n} PROPERTIES TIMEOUT 120 LABELS "mpi;mpich-patched"
                         ENVIRONMENT "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=${algo}")
  endforeach()
  # The own block, copied apart from the others by every added algorithm, fails alike: node_leader
  # copies it in its unpacking phase (truncate-self) or, sent as a strided vector, in its packing
  # phase (truncate-self-strided; patch 16).
  foreach(mode truncate-self truncate-self-strided)
    add_test(NAME mpich.cvar.${mode}.${algo}.np2
             COMMAND ${tb_expect} --status fail --match "MPIR_Alltoallw_intra_${algo}\\(" --match "cvar_switch: ok"
                     --absent "MPIR_Alltoallw_intra_(${others})\\("
                     -- ${tb_mpirun} 2 ${TB_MPIEXEC_FLAGS} ${tb_cvar_switch} ${mode})
    set_tests_properties(mpich.cvar.${mode}.${algo}.np2 PROPERTIES TIMEOUT 120 LABELS "mpi;mpich-patched"
                         ENVIRONMENT "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=${algo}")
  endforeach()
  # ... and no rank is left waiting when rank 0 goes on after it (patch 17): every rank returns and
  # meets the others in MPI_Barrier. The timeout is the hang check.
  add_test(NAME mpich.cvar.truncate-self-return.${algo}.np3
           COMMAND ${tb_expect} --match "cvar_switch: ok: rank 0: MPI_Alltoallw returned MPI_ERR_TRUNCATE"
                   -- ${tb_mpirun} 3 ${TB_MPIEXEC_FLAGS} ${tb_cvar_switch} truncate-self-return)
  set_tests_properties(mpich.cvar.truncate-self-return.${algo}.np3 PROPERTIES TIMEOUT 60 LABELS "mpi;mpich-patched"
                       ENVIRONMENT "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=${algo}")
  # Several errors in one call (rank 0 short on every receive), each a code of its own: the call
  # returns at every rank (np3), and MPI_ERRORS_ARE_FATAL prints the whole stack and aborts (np2).
  # A new error chained onto one already recorded made a loop in MPICH's error chain, which hung
  # both. The timeouts are the hang checks.
  add_test(NAME mpich.cvar.truncate-all-return.${algo}.np3
           COMMAND ${tb_expect} --match "cvar_switch: ok: rank 0: MPI_Alltoallw returned MPI_ERR_TRUNCATE"
                   -- ${tb_mpirun} 3 ${TB_MPIEXEC_FLAGS} ${tb_cvar_switch} truncate-all-return)
  add_test(NAME mpich.cvar.truncate-all.${algo}.np2
           COMMAND ${tb_expect} --status fail --match "MPIR_Alltoallw_intra_${algo}\\(" --match "cvar_switch: ok"
                   -- ${tb_mpirun} 2 ${TB_MPIEXEC_FLAGS} ${tb_cvar_switch} truncate-all)
  set_tests_properties(mpich.cvar.truncate-all-return.${algo}.np3 mpich.cvar.truncate-all.${algo}.np2 PROPERTIES
                       TIMEOUT 60 LABELS "mpi;mpich-patched" ENVIRONMENT "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=${algo}")
endforeach()
# The same signal across emulated nodes: rank 0 (node 0) gets its short block from rank 1 (node 1)
# in the leaders' aggregated message; the size header says it does not fit.
add_test(NAME mpich.cvar.truncate.node_leader_cliques2.np3
         COMMAND ${tb_expect} --status fail --match "MPIR_Alltoallw_intra_node_leader\\(" --match "cvar_switch: ok"
                 -- ${tb_mpirun} 3 ${TB_MPIEXEC_FLAGS} ${tb_cvar_switch} truncate)
set_tests_properties(mpich.cvar.truncate.node_leader_cliques2.np3 PROPERTIES TIMEOUT 120 LABELS "mpi;mpich-patched"
                     ENVIRONMENT "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=node_leader;MPIR_CVAR_NUM_CLIQUES=2")
# node_leader when one node cannot allocate its data segment (patch 0007) or, on the first call,
# its control area (patch 0012): the victim gets an error (MPI_ERR_NO_MEM for the data segment),
# every other process an error, and nobody waits (the timeout is the hang check). Victim 1 is
# alone on its node (private memory), 0 is the shared node's leader, 2 its other rank; the
# control area can be made to fail only on the shared node (the lone process takes its few
# bytes from the heap).
add_executable(tb_mpich_node_leader_nomem ${PROJECT_SOURCE_DIR}/mpich/tests/node_leader_nomem.c)
target_link_libraries(tb_mpich_node_leader_nomem PRIVATE MPI::MPI_C)
foreach(case data.0 data.1 data.2 control.0 control.2)
  string(REPLACE "." ";" parts ${case})
  list(GET parts 0 segment)
  list(GET parts 1 victim)
  set(name mpich.node_leader.nomem.victim${victim}.np3)
  if(segment STREQUAL "control")
    set(name mpich.node_leader.nomem-control.victim${victim}.np3)
  endif()
  add_test(NAME ${name}
           COMMAND ${tb_expect} --match "rank 0 .*as expected" --match "rank 1 .*as expected"
                   --match "rank 2 .*as expected" --absent "WRONG"
                   -- ${tb_mpirun} 3 ${TB_MPIEXEC_FLAGS} $<TARGET_FILE:tb_mpich_node_leader_nomem> ${victim} ${segment})
  set_tests_properties(${name} PROPERTIES TIMEOUT 60 LABELS "mpi;mpich-patched"
                       ENVIRONMENT "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=node_leader;MPIR_CVAR_NUM_CLIQUES=2")
endforeach()
# node_leader without a node hierarchy (one rank per node: np2 on two cliques) falls back visibly.
add_test(NAME mpich.cvar.flat-fallback.node_leader.np2
         COMMAND ${tb_expect} --match "Alltoallw node_leader cannot be applied" --match "^ No Errors"
                 -- ${tb_mpirun} 2 ${TB_MPIEXEC_FLAGS} $<TARGET_FILE:mpich_alltoallw1>)
set_tests_properties(mpich.cvar.flat-fallback.node_leader.np2 PROPERTIES TIMEOUT 120 LABELS "mpi;mpich-patched"
                     ENVIRONMENT "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=node_leader;MPIR_CVAR_NUM_CLIQUES=2;MPIR_CVAR_COLLECTIVE_FALLBACK=print")
# node_leader's copies with ordinary and with streaming stores (patch 0014: a phase streams from
# MPII_COLL_STREAM_MIN_BYTES, 4 MiB), checked by tb-redistribute (every received element against its global index). At
# 32^3 c64 every phase stays below 4 MiB; at 96^3 each rank's pack phase moves 6.75 MiB (streams)
# and its unpack phase 3.4 MiB (does not). A fallback would be an error, not another algorithm.
foreach(n 32 96)
  add_test(NAME mpich.node_leader.copy-stores.shape${n}.np2
           COMMAND ${tb_expect} --match "^ *alltoallw:native +yes "
                   -- ${tb_mpirun} 2 ${TB_MPIEXEC_FLAGS} $<TARGET_FILE:tb-redistribute> --shape ${n},${n},${n}
                      --type c64 --method native --outer 1)
  set_tests_properties(mpich.node_leader.copy-stores.shape${n}.np2 PROPERTIES TIMEOUT 120 LABELS "mpi;mpich-patched"
                       ENVIRONMENT "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=node_leader;MPIR_CVAR_COLLECTIVE_FALLBACK=error")
endforeach()
# MPI_IN_PLACE with an out-of-place-only algorithm forced: MPICH names the forced algorithm when
# it falls back (MPIR_CVAR_COLLECTIVE_FALLBACK=print), and the fallback's result is right.
foreach(algo ${TB_MPICH_ALGORITHMS})
  add_test(NAME mpich.cvar.inplace-fallback.${algo}.np3
           COMMAND ${tb_expect} --match "Alltoallw ${algo} cannot be applied" --match "cvar_switch: ok"
                   -- ${tb_mpirun} 3 ${TB_MPIEXEC_FLAGS} ${tb_cvar_switch} inplace)
  set_tests_properties(mpich.cvar.inplace-fallback.${algo}.np3 PROPERTIES TIMEOUT 120 LABELS "mpi;mpich-patched"
                       ENVIRONMENT "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=${algo};MPIR_CVAR_COLLECTIVE_FALLBACK=print")
endforeach()
# An unknown name is rejected at MPI_Init (the CVAR parser knows the names: a typo cannot silently
# run the default).
add_test(NAME mpich.cvar.unknown-name
         COMMAND ${tb_expect} --status fail
                 --match "Invalid MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM value \\(no_such_algorithm\\)"
                 -- ${tb_mpirun} 1 ${TB_MPIEXEC_FLAGS} ${tb_cvar_switch} version)
set_tests_properties(mpich.cvar.unknown-name PROPERTIES TIMEOUT 60 LABELS "mpi;mpich-patched"
                     ENVIRONMENT "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=no_such_algorithm")

# ---- which library the tests load --------------------------------------------------------------
# MPI_Get_library_version names the install (its configure line carries the prefix, and so the
# cache key) and MPI_T lists the added algorithms in the CVAR's description.
add_test(NAME mpich.library.version
         COMMAND ${tb_expect} --match "MPICH Version:[[:space:]]+4\\.0\\.2" --match "--prefix=${TB_MPICH_PREFIX}"
                 --match "pairwise +- Force pairwise algorithm" --match "pack_alltoallv +- Force pack algorithm"
                 --match "node_leader +- Force node-leader algorithm" --match "cvar_switch: ok"
                 -- ${tb_mpirun} 1 ${TB_MPIEXEC_FLAGS} ${tb_cvar_switch} version)
# The dynamic loader resolves libmpi to the patched install (RUNPATH from the wrappers and CMake),
# for the testbed's own binaries and for the MPICH tests; Debian's libmpich is not loaded.
foreach(target test_conformance tb-redistribute mpich_alltoallw1)
  add_test(NAME mpich.library.ldd.${target}
           COMMAND ${tb_expect} --match "libmpi\\.so\\.12 => ${TB_MPICH_PREFIX}/lib/libmpi\\.so\\.12"
                   --absent "libmpich\\.so" -- ldd $<TARGET_FILE:${target}>)
endforeach()
set_tests_properties(mpich.library.version mpich.library.ldd.test_conformance mpich.library.ldd.tb-redistribute
                     mpich.library.ldd.mpich_alltoallw1 PROPERTIES TIMEOUT 60 LABELS "mpich-patched")

# ---- the testbed's conformance suite with native = the forced algorithm -------------------------
foreach(algo ${TB_MPICH_ALGORITHMS})
  tb_add_mpi_test(test_conformance VARIANT native_${algo} RANKS 1 2 3 4 TIMEOUT 600
                  ENVIRONMENT MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=${algo})
endforeach()
tb_add_mpi_test(test_conformance VARIANT native_node_leader_cliques2 RANKS 3 4 TIMEOUT 600
                ENVIRONMENT MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM=node_leader MPIR_CVAR_NUM_CLIQUES=2)

# ---- the series as git commits (mpich/series.sh) -------------------------------------------------
# checkout then write gives the series back byte for byte; a reworded, amended commit changes only
# its own patch; write refuses uncommitted edits and empty commits (mpich/tests/series_round_trip.sh).
add_test(NAME mpich.series.round-trip COMMAND ${PROJECT_SOURCE_DIR}/mpich/tests/series_round_trip.sh)
set_tests_properties(mpich.series.round-trip PROPERTIES TIMEOUT 600 LABELS "mpich-patched")
