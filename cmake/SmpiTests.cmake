# The smpi variant's tests (included by tests/CMakeLists.txt when TB_SMPI): the testbed's own
# gtest suites and tools, each run by bin/tb-smpirun (cmake/tb-smpirun.in) on the CI cluster
# (experiments/platforms/smpi-ci-cluster.xml: 2 simulated hosts x 2 cores). With 2 ranks the
# ranks share one host (one node); with 3 and 4 they make nodes of 2+1 and 2+2, so node_leader
# runs its on-node (shared-memory window) and its inter-node (leader message) paths.
# What proves they ran simulated and right, in every test: exit status 0 and SMPI's end-of-run
# line "Simulated time: ... seconds" (tests/expect_output.sh, nested), plus the test's own check:
# gtest's verdict (every algorithm's redistribution against the known global array, the FFT
# against serial FFTW, node_leader's paths), or a tool's verified row and path per algorithm.
# Not here, and why (the other variants run them):
#  - test_conformance: its random datatypes include darray, which SMPI 3.32 does not implement
#    (MPI_Type_create_darray aborts the simulation), and without darray SMPI's own
#    MPI_Alltoallw (native, the reference) gives different bytes for the same random types in
#    some cases, so a mismatch would not say which side is wrong;
#  - gtest cases that set TB_* variables (test::ScopedEnv): SMPI's ranks share one process
#    environment, so one rank's setting and restoring races with the others' (filtered below);
#  - the PMPI library and its tests (pmpi.*, plugin.*, persistent_app.*): LD_PRELOAD interposes
#    on smpirun's one process, not per simulated rank; the library is not built;
#  - tb-bench, tb-bench-pack, tb-soak (not built, see microbench/CMakeLists.txt), fpga_transport
#    (not built, see CMakeLists.txt), the python runner and Slurm tests, sanitizers;
#  - tests of MPICH's or Open MPI's own behaviour (node emulation CVARs, known library defects,
#    finalize hangs over UCX), of UCX, of virtual nodes (TB_NUM_NODES; the platform has real
#    ones) and of timings (test_timing: SMPI's clock is simulated).
set(TB_SMPIRUN ${MPIEXEC_EXECUTABLE})
set(TB_SMPI_DEFAULT_PLATFORM ${PROJECT_SOURCE_DIR}/experiments/platforms/smpi-ci-cluster.xml)
set(TB_SMPI_DEFAULT_HOSTFILE ${PROJECT_SOURCE_DIR}/experiments/platforms/smpi-ci-cluster.hosts)
configure_file(${PROJECT_SOURCE_DIR}/cmake/tb-smpirun.in ${CMAKE_BINARY_DIR}/bin/tb-smpirun @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(TB_SMPI_LAUNCH ${CMAKE_BINARY_DIR}/bin/tb-smpirun)

add_library(tb_mpi_gtest_main STATIC mpi_gtest_main.cpp)
target_link_libraries(tb_mpi_gtest_main PUBLIC GTest::gtest MPI::MPI_CXX)
add_library(tb_random_types STATIC random_types.cpp)
target_link_libraries(tb_random_types PUBLIC tb_collectives)
foreach(name test_redistribute test_node_leader)
  add_executable(${name} ${name}.cpp)
  target_link_libraries(${name} PRIVATE tb_redistribute tb_microbench tb_random_types tb_mpi_gtest_main)
endforeach()
add_executable(test_fft test_fft.cpp)
target_link_libraries(test_fft PRIVATE tb_fft tb_mpi_gtest_main)
add_executable(test_simulated_engine test_simulated_engine.cpp)
target_link_libraries(test_simulated_engine PRIVATE tb_collectives tb_mpi_gtest_main nlohmann_json::nlohmann_json)

# tb_add_smpi_test(<name> RANKS n... [TIMEOUT s] EXPECT regex... COMMAND program args...)
# One test per rank count, smpi.<name>.np<N>: passes when the program exits 0 under tb-smpirun,
# SMPI's end-of-run line is printed, and every EXPECT regex (grep -E, one line) matches.
function(tb_add_smpi_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "RANKS;EXPECT;COMMAND" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  set(checks ${PROJECT_SOURCE_DIR}/tests/expect_output.sh "Simulated time: [0-9.e+-]+ seconds")
  foreach(regex IN LISTS ARG_EXPECT)
    list(APPEND checks ${PROJECT_SOURCE_DIR}/tests/expect_output.sh "${regex}")
  endforeach()
  foreach(n IN LISTS ARG_RANKS)
    add_test(NAME smpi.${name}.np${n} COMMAND ${checks} ${TB_SMPI_LAUNCH} -np ${n} ${ARG_COMMAND})
    set_tests_properties(smpi.${name}.np${n} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "mpi;smpi;np${n}")
  endforeach()
endfunction()

# Every method (the registry: native, pairwise, pack_alltoallv, node_leader, auto; and
# local_remap) redistributes every dimension and element type right, and the FFT matches serial
# FFTW, less the cases that set TB_* variables.
tb_add_smpi_test(test_redistribute RANKS 2 3 4 EXPECT "\\[  PASSED  \\] [0-9]+ tests"
                 COMMAND $<TARGET_FILE:test_redistribute>
                         --gtest_filter=-Registry.TbAlltoallwChoosesTheDefault:Redistribution.AssumeSameSkipsTheAgreementAndCheckedModeCatchesAFalseAssertion)
tb_add_smpi_test(test_fft RANKS 2 4 EXPECT "\\[  PASSED  \\] [0-9]+ tests" COMMAND $<TARGET_FILE:test_fft>)
# node_leader's own tests: one node (2 ranks), 2+1 and 2+2 simulated hosts, private and
# node-shared arrays, the staging window's reuse, the prepared form.
set(env_cases NodeLeader.SharedArraysAreReadOnceBySingleCopyAndStagedOnRequest NodeLeader.MalformedSettingsAreNamed
              NodeLeaderPersistent.StagedOnRequest NodeLeaderPersistent.TwoEmulatedNodes)
list(JOIN env_cases ":" env_cases)
tb_add_smpi_test(test_node_leader RANKS 2 3 4 EXPECT "\\[  PASSED  \\] [0-9]+ tests"
                 COMMAND $<TARGET_FILE:test_node_leader> --gtest_filter=-${env_cases})

# The library's datatype work (collectives/simulated_datatype_engine.hpp), charged where the
# platform prices it and computation is simulated, and nowhere else: this host's platform written
# with experiments/host_platform.py from the calibration in docs/results (a fixture), once with
# --noncontiguous-extras (the measured extras) and once with --datatype-engine (one MPI_Pack
# pass), the shipped this-host.xml (written with neither), and the pass's platform with
# computation off (tb-smpirun passes smpi/simulate-computation:no on); and with the extras of a
# later calibration (a second fixture) that also has those of a message to itself, which native's
# own block is then charged.
set(engine_calibration ${PROJECT_SOURCE_DIR}/docs/results/2026-12-03-this-host-calibration.json)
set(self_calibration ${PROJECT_SOURCE_DIR}/docs/results/2026-12-07-smpi-single-extras/with-self-run2-host-loop.json)
set(extras_platform ${CMAKE_CURRENT_BINARY_DIR}/this-host-noncontiguous-extras.xml)
set(self_extras_platform ${CMAKE_CURRENT_BINARY_DIR}/this-host-self-extras.xml)
set(engine_platform ${CMAKE_CURRENT_BINARY_DIR}/this-host-datatype-engine.xml)
set(this_host_hosts ${CMAKE_CURRENT_BINARY_DIR}/this-host-2.hosts)
file(WRITE ${this_host_hosts} "node-0\nnode-0\n")
foreach(case "noncontiguous-extras;noncontiguous-extras;${engine_calibration};${extras_platform};with the measured non-contiguous extras, without those of a message to itself"
             "self-extras;noncontiguous-extras;${self_calibration};${self_extras_platform};with the measured non-contiguous extras, with those of a message to itself"
             "datatype-engine;datatype-engine;${engine_calibration};${engine_platform};with the library's datatype engine")
  list(GET case 0 name)
  list(GET case 1 option)
  list(GET case 2 calibration)
  list(GET case 3 platform)
  list(GET case 4 says)
  add_test(NAME smpi.simulated-engine.platform.${name}
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/experiments/host_platform.py ${calibration} --${option}
                   --out ${platform})
  set_tests_properties(smpi.simulated-engine.platform.${name} PROPERTIES TIMEOUT 30 LABELS "smpi;python"
                       FIXTURES_SETUP smpi_engine_platform PASS_REGULAR_EXPRESSION "${says}")
endforeach()
foreach(case "charged: measured;with-extras;${extras_platform};;${engine_calibration}"
             "charged: measured;with-self-extras;${self_extras_platform};;${self_calibration}"
             "charged:;with-engine;${engine_platform};;${engine_calibration}"
             "not charged;this-host;${PROJECT_SOURCE_DIR}/experiments/platforms/this-host.xml;;${engine_calibration}"
             "not charged;with-extras-compute-off;${extras_platform};--cfg=smpi/simulate-computation:no;${engine_calibration}"
             "not charged;with-engine-compute-off;${engine_platform};--cfg=smpi/simulate-computation:no;${engine_calibration}")
  list(GET case 0 expect)
  list(GET case 1 name)
  list(GET case 2 platform)
  list(GET case 3 option)
  list(GET case 4 calibration)
  add_test(NAME smpi.simulated-engine.${name}.np2
           COMMAND ${PROJECT_SOURCE_DIR}/tests/expect_output.sh "Simulated time: [0-9.e+-]+ seconds"
                   ${PROJECT_SOURCE_DIR}/tests/expect_output.sh "\\[  PASSED  \\] 8 tests"
                   ${TB_SMPI_LAUNCH} ${option} -np 2 $<TARGET_FILE:test_simulated_engine>)
  set_tests_properties(smpi.simulated-engine.${name}.np2 PROPERTIES TIMEOUT 120 LABELS "mpi;smpi;np2"
                       FIXTURES_REQUIRED smpi_engine_platform ENVIRONMENT
                       "TB_TEST_ENGINE=${expect};TB_TEST_CALIBRATION=${calibration};TB_SMPI_PLATFORM=${platform};TB_SMPI_HOSTFILE=${this_host_hosts}")
endforeach()
# A property that is not what it must be stops the run with a message naming it (here a pass
# table with a word for a bandwidth, extras with a negative block size), and so does a host whose
# zones carry both prices.
set(bad_engine_platform ${CMAKE_CURRENT_BINARY_DIR}/this-host-bad-datatype-engine.xml)
add_test(NAME smpi.simulated-engine.bad-property.np2
         COMMAND /bin/sh -c "sed 's/tb_datatype_engine_bandwidth_by_bytes\" value=\"65536:/tb_datatype_engine_bandwidth_by_bytes\" value=\"65536:fast/' \"$1\" > \"$2\" && TB_SMPI_PLATFORM=\"$2\" exec \"$3\" --fail \"property tb_datatype_engine_bandwidth_by_bytes has the entry '65536:fast[0-9.e+]*'\" \"$4\" -np 2 \"$5\""
                 bad-property ${engine_platform} ${bad_engine_platform} ${PROJECT_SOURCE_DIR}/tests/expect_output.sh
                 ${TB_SMPI_LAUNCH} $<TARGET_FILE:test_simulated_engine>)
set(bad_extras_platform ${CMAKE_CURRENT_BINARY_DIR}/this-host-bad-extras.xml)
add_test(NAME smpi.simulated-engine.bad-extras.np2
         COMMAND /bin/sh -c "sed 's/\\(block_bytes.\\):64[.]0,/\\1:-64.0,/' \"$1\" > \"$2\" && TB_SMPI_PLATFORM=\"$2\" exec \"$3\" --fail \"property tb_noncontiguous_extra_seconds has send.0. out of order or not > 0; it must be a JSON object\" \"$4\" -np 2 \"$5\""
                 bad-extras ${extras_platform} ${bad_extras_platform} ${PROJECT_SOURCE_DIR}/tests/expect_output.sh
                 ${TB_SMPI_LAUNCH} $<TARGET_FILE:test_simulated_engine>)
set(both_prices_platform ${CMAKE_CURRENT_BINARY_DIR}/this-host-both-prices.xml)
add_test(NAME smpi.simulated-engine.both-prices.np2
         COMMAND /bin/sh -c "grep -o '<prop id=.tb_datatype_engine_bandwidth_by_bytes[^>]*>' \"$1\" > \"$2.prop\" && sed '/<prop id=.tb_noncontiguous_extra_seconds/r '\"$2.prop\" \"$6\" > \"$2\" && TB_SMPI_PLATFORM=\"$2\" exec \"$3\" --fail \"property tb_noncontiguous_extra_seconds stands beside tb_datatype_engine_bandwidth_by_bytes\" \"$4\" -np 2 \"$5\""
                 both-prices ${engine_platform} ${both_prices_platform} ${PROJECT_SOURCE_DIR}/tests/expect_output.sh
                 ${TB_SMPI_LAUNCH} $<TARGET_FILE:test_simulated_engine> ${extras_platform})
set_tests_properties(smpi.simulated-engine.bad-property.np2 smpi.simulated-engine.bad-extras.np2
                     smpi.simulated-engine.both-prices.np2 PROPERTIES TIMEOUT 60 LABELS "mpi;smpi;np2"
                     FIXTURES_REQUIRED smpi_engine_platform ENVIRONMENT
                     "TB_TEST_ENGINE=charged;TB_SMPI_HOSTFILE=${this_host_hosts}")

# The tools: the MPI library they report is SMPI's; every method verifies; node_leader's path
# names the leader message between the two simulated hosts (slab over all ranks), and with
# arrays in node-shared memory its single on-node copy.
set(slab $<TARGET_FILE:tb-redistribute> --shape 12,13,14 --grid 0 --from-axis 2 --to-axis 0 --outer 2)
tb_add_smpi_test(tb-redistribute RANKS 3 4
                 EXPECT "MPI: SMPI Version 3" "node_leader \\(on-node: staged; inter-node: 1 aggregated message\\) +yes"
                        "pairwise +yes" "pack_alltoallv +yes" "auto .*-> [a-z_]+ +yes" "local_remap[^ ]* +yes"
                 COMMAND ${slab} --method all)
tb_add_smpi_test(tb-redistribute.shared-buffers RANKS 4
                 EXPECT "node_leader \\(on-node: single-copy [a-z]+; inter-node: 1 aggregated message\\) +yes"
                 COMMAND ${slab} --method node_leader,native --buffers shared)
tb_add_smpi_test(tb-fft RANKS 4 TIMEOUT 300
                 EXPECT "MPI: SMPI Version 3" "node_leader +strided +yes" "local_remap +contiguous +yes"
                 COMMAND $<TARGET_FILE:tb-fft> --shape 12,13,14 --grid 0,0 --kind r2c --method all
                         --serial strided,contiguous --planner estimate --outer 2)
# The registry of this variant: every algorithm SMPI can run, and no ucx_zcopy (not built);
# asking for it is the registry's error, which says why it is missing and lists what is registered.
tb_add_smpi_test(list-algorithms RANKS 1
                 EXPECT "^native " "^pairwise " "^pack_alltoallv " "^node_leader " "^auto " "^local_remap"
                 COMMAND $<TARGET_FILE:tb-redistribute> --list-algorithms)
add_test(NAME smpi.no-ucx-zcopy.np2
         COMMAND ${PROJECT_SOURCE_DIR}/tests/expect_output.sh --fail "Alltoallw algorithm 'ucx_zcopy' is not in this build: it needs UCX.*; registered: native"
                 ${TB_SMPI_LAUNCH} -np 2 $<TARGET_FILE:tb-redistribute> --shape 8,8 --method ucx_zcopy --outer 1)
set_tests_properties(smpi.no-ucx-zcopy.np2 PROPERTIES TIMEOUT 60 LABELS "mpi;smpi;np2")

# The runner's smpi mode end to end (experiments/run.py --mode smpi): the tiny definition
# experiments/definitions/smpi_ci_tiny.json (4 ranks on one simulated node, 36 on two) on the
# XC40-like dragonfly platform into a fresh store; analysis/store.py must read back every point's
# rows with mode and mpi smpi, the platform named, shared arrays and verification off, and the
# tool's own rows saying "off" where a method was timed.
set(smpi_run_dir ${CMAKE_CURRENT_BINARY_DIR}/smpi-run-mode)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/check_smpi_store.py [=[
import sys
sys.path.insert(0, sys.argv[1] + "/analysis")
from store import read_rows  # the one reader of a store
rows, platform = read_rows(sys.argv[2]), sys.argv[3]
want = {"mode": "smpi", "mpi": "smpi", "platform": platform, "smpi_arrays": "shared", "verification": "off",
        "experiment": "smpi_ci_tiny"}
wrong = [r for r in rows if any(r.get(k) != v for k, v in want.items())]
methods = {r["method"]: r["verified"] for r in rows if r["ranks"] == 36}
problems = [f"{len(wrong)} row(s) not {want}"] if wrong else []
if sorted({r["ranks"] for r in rows}) != [4, 36]:
    problems.append(f"ranks {sorted({r['ranks'] for r in rows})}, not [4, 36]")
if methods.get("alltoallw:native") != "off" or not any(m.startswith("local_remap") for m in methods):
    problems.append(f"the 36-rank methods are {methods}")
print(f"smpi run mode: {'FAILED: ' + '; '.join(problems) if problems else 'ok'} ({len(rows)} rows)")
]=])
add_test(NAME smpi.experiments.run-mode
         COMMAND /bin/sh -c "rm -rf \"$1\" && mkdir -p \"$1\" && /usr/bin/python3 \"$2/experiments/run.py\" \"$2/experiments/definitions/smpi_ci_tiny.json\" --mode smpi --platform \"$2/experiments/platforms/xc40-dragonfly.xml\" --bin \"$3\" --store \"$1/store.jsonl\" && /usr/bin/python3 \"$4\" \"$2\" \"$1/store.jsonl\" experiments/platforms/xc40-dragonfly.xml"
                 smpi-run-mode ${smpi_run_dir} ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR}/bin
                 ${CMAKE_CURRENT_BINARY_DIR}/check_smpi_store.py)
set_tests_properties(smpi.experiments.run-mode PROPERTIES TIMEOUT 60 LABELS "smpi;python"
                     PASS_REGULAR_EXPRESSION "smpi run mode: ok" FAIL_REGULAR_EXPRESSION "FAILED|Traceback")
