# The selection JSON of the mpich-patched variant (included after mpich/tests.cmake, whose
# variables it uses): MPICH's collective selection (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)
# reads what analysis/mpich_algorithms.py writes, and the shipped file works.
#
#   mpich.selection.generated.*   the generator's tree, from a fixture of measurements (4 ranks,
#                                 one node: pairwise up to 16 B sent per rank, pack_alltoallv
#                                 above; --uniform), picks those algorithms in MPICH: the truncate
#                                 probe's error stack names pairwise at 2 ranks (16 B per rank)
#                                 and pack_alltoallv at 3 (24 B), never scattered
#   mpich.selection.shipped.*     MPICH's alltoallw tests pass with mpich/tuning/alltoallw.json, and
#                                 its branch for 3-4 ranks picks node_leader (the truncate probe)
#   mpich.selection.bad-file.*    a selection file that is missing, empty or not JSON fails
#                                 MPI_Init with a message naming the file (patch 10), no crash
#   mpich.selection.campaign      experiments/mpich_algorithms.sh -q -n 1,2 end to end (needs build/mpich
#                                 beside build/mpich-patched, as scripts/test.sh builds them)
set(tb_generic_json "${tb_mpich_key_dir}/src/maint/tuning/coll/mpir/generic.json")
set(tb_generated_json "${CMAKE_CURRENT_BINARY_DIR}/selection-from-fixture.json")
add_test(NAME mpich.selection.generate
         COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/analysis/mpich_algorithms.py
                 ${PROJECT_SOURCE_DIR}/analysis/fixtures/mpich_selection_store.jsonl --uniform
                 --selection-json ${tb_generated_json} --generic ${tb_generic_json})
set_tests_properties(mpich.selection.generate PROPERTIES TIMEOUT 60 LABELS "mpich-patched;python"
                     FIXTURES_SETUP mpich_selection_json
                     PASS_REGULAR_EXPRESSION "pairwise up to 16 B sent per rank; pack_alltoallv above")
foreach(case "2;pairwise" "3;pack_alltoallv")
  list(GET case 0 n)
  list(GET case 1 algo)
  set(others pairwise pack_alltoallv scattered)
  list(REMOVE_ITEM others ${algo})
  list(JOIN others "|" others)
  add_test(NAME mpich.selection.generated.${algo}.np${n}
           COMMAND ${tb_expect} --status fail --match "MPIR_Alltoallw_intra_${algo}\\(" --match "cvar_switch: ok"
                   --absent "MPIR_Alltoallw_intra_(${others})\\("
                   -- ${tb_mpirun} ${n} ${TB_MPIEXEC_FLAGS} ${tb_cvar_switch} truncate)
  set_tests_properties(mpich.selection.generated.${algo}.np${n} PROPERTIES TIMEOUT 120 LABELS "mpi;mpich-patched"
                       FIXTURES_REQUIRED mpich_selection_json
                       ENVIRONMENT "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=${tb_generated_json}")
endforeach()

foreach(t alltoallw1 alltoallw2 alltoallw_zeros)
  foreach(n 1 2 3 4)
    add_test(NAME mpich.selection.shipped.${t}.np${n}
             COMMAND ${tb_mpirun} ${n} ${TB_MPIEXEC_FLAGS} $<TARGET_FILE:mpich_${t}>)
    set_tests_properties(mpich.selection.shipped.${t}.np${n} PROPERTIES TIMEOUT 120 LABELS "mpi;mpich-patched"
                         ENVIRONMENT "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=${PROJECT_SOURCE_DIR}/mpich/tuning/alltoallw.json"
                         PASS_REGULAR_EXPRESSION "^ No Errors\n"
                         FAIL_REGULAR_EXPRESSION "Found [0-9]+ errors|[Aa]bort|Fatal error")
  endforeach()
endforeach()

# The shipped file's branches beyond 2 ranks are read: at 3 and 4 ranks on one node it picks
# node_leader (its comm_size<=4 branch), where MPICH's own tree runs scattered.
foreach(n 3 4)
  add_test(NAME mpich.selection.shipped.node_leader.np${n}
           COMMAND ${tb_expect} --status fail --match "MPIR_Alltoallw_intra_node_leader\\(" --match "cvar_switch: ok"
                   --absent "MPIR_Alltoallw_intra_(scattered|pairwise|pack_alltoallv)\\("
                   -- ${tb_mpirun} ${n} ${TB_MPIEXEC_FLAGS} ${tb_cvar_switch} truncate)
  set_tests_properties(mpich.selection.shipped.node_leader.np${n} PROPERTIES TIMEOUT 120 LABELS "mpi;mpich-patched"
                       ENVIRONMENT "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=${PROJECT_SOURCE_DIR}/mpich/tuning/alltoallw.json")
endforeach()

file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/selection-empty.json" "")
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/selection-not-json.json" "not json\n")
foreach(case "missing;/nonexistent/selection.json;cannot read the collective selection file /nonexistent/selection.json: No such file"
             "empty;${CMAKE_CURRENT_BINARY_DIR}/selection-empty.json;selection-empty.json: it is empty"
             "not-json;${CMAKE_CURRENT_BINARY_DIR}/selection-not-json.json;selection-not-json.json is not valid JSON")
  list(GET case 0 name)
  list(GET case 1 file)
  list(GET case 2 message)
  add_test(NAME mpich.selection.bad-file.${name}
           COMMAND ${tb_expect} --status fail --match "${message}" --absent "Segmentation|Assertion failed"
                   -- ${tb_mpirun} 1 ${TB_MPIEXEC_FLAGS} $<TARGET_FILE:mpich_alltoallw1>)
  set_tests_properties(mpich.selection.bad-file.${name} PROPERTIES TIMEOUT 60 LABELS "mpi;mpich-patched"
                       ENVIRONMENT "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=${file}")
endforeach()

# Skipped (ctest says so) where build/mpich is missing: scripts/test.sh mpich-patched alone.
add_test(NAME mpich.selection.campaign
         COMMAND bash -c "[ -x \"$1/build/mpich/bin/tb-bench\" ] || { echo 'needs build/mpich (scripts/build.sh mpich)'; exit 77; }; \"$1/experiments/mpich_algorithms.sh\" -q -f -R -n 1,2 -s \"$2/store.jsonl\" -j \"$2/selection.json\" && grep -q '\"comm_size<=1\"' \"$2/selection.json\" && grep -q '\"comm_size<=2\"' \"$2/selection.json\" || { echo 'campaign failed, or its selection lacks a branch per rank count'; exit 1; }"
                 campaign ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/campaign)
set_tests_properties(mpich.selection.campaign PROPERTIES TIMEOUT 600 LABELS "mpi;mpich-patched;python"
                     SKIP_RETURN_CODE 77 FAIL_REGULAR_EXPRESSION "Traceback")
