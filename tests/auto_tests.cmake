# auto and its tuning table (collectives/algorithms/auto.hpp, collectives/tuning_table.hpp,
# experiments/tune.py; docs/auto-and-tuning.md). Included from tests/CMakeLists.txt.
#
#   test_auto.np*             the built-in rule, a table's choice followed (results equal native's),
#                             one algorithm per call when ranks' own classes differ, bad tables,
#                             the prepared form and the table's persistent entries, the agreement
#                             through shared memory (NodeMax against MPI_Allreduce)
#   test_auto.two_nodes.np*   the same on two virtual nodes (another node layout, so other keys)
#   auto.tune.unit            the tuner's table and MPICH-selection writers (experiments/test_tune.py)
#   auto.tune.end-to-end      experiments/tune.py at a tiny size on this build, then tb-bench with
#                             TB_TUNING_TABLE: auto's path (blocking and prepared) names the
#                             table's choice (blocking and persistent entries), on a slab call the
#                             band its points joined; the agreement priced (Open MPI's launches
#                             take about 3 minutes of it); a blocking-only sweep whose one-algorithm
#                             rule takes both node layouts keeps its bands as "prepared" entries,
#                             which auto's prepared calls follow
add_executable(test_auto test_auto.cpp)
target_link_libraries(test_auto PRIVATE tb_collectives tb_mpi_gtest_main)
tb_add_mpi_test(test_auto RANKS 1 2 3 4 TIMEOUT 300)
tb_add_mpi_test(test_auto VARIANT two_nodes RANKS 2 3 TIMEOUT 300 ENVIRONMENT TB_NUM_NODES=2)

add_test(NAME auto.tune.unit
         COMMAND /usr/bin/python3 -m unittest discover -s ${PROJECT_SOURCE_DIR}/experiments -p "test_tune.py")
set_tests_properties(auto.tune.unit PROPERTIES TIMEOUT 60 LABELS "python")

add_test(NAME auto.tune.end-to-end
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tune_end_to_end.py --build ${CMAKE_BINARY_DIR}
                 --mpi ${TB_MPI_FLAVOR} --out ${CMAKE_CURRENT_BINARY_DIR}/tune-e2e)
set_tests_properties(auto.tune.end-to-end PROPERTIES TIMEOUT 450 LABELS "mpi;python"
                     ENVIRONMENT "${TB_MPI_TEST_ENV}" PASS_REGULAR_EXPRESSION "tune end-to-end: ok"
                     FAIL_REGULAR_EXPRESSION "FAILED|Traceback")
