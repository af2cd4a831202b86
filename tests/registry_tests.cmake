# Included by ctest (TEST_INCLUDE_FILES), like gtest_discover_tests: asks the registry, through
# `tb-model --list-algorithms`, which algorithms exist, and adds the PMPI tests of each one. The
# tests follow the registry; there is no list of algorithms here to keep up to date.
# The including file (generated in the build tree) sets the TB_* paths used below.

execute_process(COMMAND ${TB_MODEL} --list-algorithms OUTPUT_VARIABLE listing ERROR_VARIABLE errors
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  add_test(registry.list-algorithms-failed ${CMAKE_COMMAND} -E echo "tb-model --list-algorithms: ${errors}")
  set_tests_properties(registry.list-algorithms-failed PROPERTIES WILL_FAIL TRUE)
  return()
endif()

# A ';' in a summary would split a line into two list elements: make it a comma first.
string(REPLACE ";" "," listing "${listing}")
string(REGEX MATCHALL "[^\n]+" lines "${listing}")
foreach(line IN LISTS lines)
  string(REGEX MATCH "^[^ ]+" algorithm "${line}")
  if(algorithm STREQUAL "local_remap")  # the redistribution baseline, not an Alltoallw algorithm
    continue()
  endif()
  foreach(n 1 3)
    add_test(pmpi.${algorithm}.np${n} ${TB_RUN_PRELOADED} ${TB_PMPI_LIBRARY} ${algorithm} ok
             ${TB_MPIEXEC} ${TB_MPIEXEC_NUMPROC_FLAG} ${n} ${TB_MPIEXEC_FLAGS} ${TB_ALLTOALLW_APP})
    set_tests_properties(pmpi.${algorithm}.np${n} PROPERTIES TIMEOUT 120 LABELS "mpi;pmpi"
                         ENVIRONMENT "${TB_MPI_TEST_ENV}")
  endforeach()
  # The persistent form under the PMPI library: the prepared call at init (its path printed), three
  # starts with new data, one through MPI_Startall, and a mismatched init failing on every rank
  # (the app exits 0 only when all of that holds).
  foreach(n 1 3)
    add_test(pmpi.persistent.${algorithm}.np${n} ${TB_EXPECT_OUTPUT}
             "MPI_Alltoallw_init via ${algorithm}"
             ${TB_MPIEXEC} ${TB_MPIEXEC_NUMPROC_FLAG} ${n} ${TB_MPIEXEC_FLAGS} ${TB_ALLTOALLW_PERSISTENT_APP} --mismatch)
    set_tests_properties(pmpi.persistent.${algorithm}.np${n} PROPERTIES TIMEOUT 120 LABELS "mpi;pmpi"
                         ENVIRONMENT "${TB_MPI_TEST_ENV};LD_PRELOAD=${TB_PMPI_LIBRARY};TB_ALLTOALLW=${algorithm};TB_ALLTOALLW_VERBOSE=1")
  endforeach()
  # Misuse without and with TB_CHECKED (tests/alltoallw_misuse.c): the expected class where the
  # algorithm can know, no hang, no write past the receive layout, and a correct call after each.
  foreach(mode unchecked checked)
    set(suffix "")
    set(flag 0)
    if(mode STREQUAL "checked")
      set(suffix ".checked")
      set(flag 1)
    endif()
    foreach(n 1 3)
      add_test(pmpi.misuse.${algorithm}${suffix}.np${n} ${TB_EXPECT_OUTPUT} "alltoallw_misuse: OK"
               ${TB_MPIEXEC} ${TB_MPIEXEC_NUMPROC_FLAG} ${n} ${TB_MPIEXEC_FLAGS} ${TB_ALLTOALLW_MISUSE})
      set_tests_properties(pmpi.misuse.${algorithm}${suffix}.np${n} PROPERTIES TIMEOUT 60 LABELS "mpi;pmpi"
                           ENVIRONMENT "${TB_MPI_TEST_ENV};LD_PRELOAD=${TB_PMPI_LIBRARY};TB_ALLTOALLW=${algorithm};TB_CHECKED=${flag}")
    endforeach()
  endforeach()
  # A rank killed mid-call ends the job within 30 s (tests/alltoallw_killed_rank.c).
  add_test(pmpi.killed-rank.${algorithm}.np3 ${TB_RUN_KILLED_RANK}
           ${TB_MPIEXEC} ${TB_MPIEXEC_NUMPROC_FLAG} 3 ${TB_MPIEXEC_FLAGS} ${TB_ALLTOALLW_KILLED_RANK})
  set_tests_properties(pmpi.killed-rank.${algorithm}.np3 PROPERTIES TIMEOUT 90 LABELS "mpi;pmpi;fault"
                       ENVIRONMENT "${TB_MPI_TEST_ENV};LD_PRELOAD=${TB_PMPI_LIBRARY};TB_ALLTOALLW=${algorithm}")
endforeach()
