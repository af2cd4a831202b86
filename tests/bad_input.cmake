# Bad input to every tool is a clear, named error (tests/bad_input.py: a table of cases, each
# run under this build's mpiexec or directly, 10 s each). One ctest per tool family, so that a
# failure says where; tb-fftw-mpi's cases report themselves skipped where it is not built.
set(_tb_bad_input_flags "")
foreach(flag IN LISTS TB_MPIEXEC_FLAGS)
  list(APPEND _tb_bad_input_flags "--mpiexec-flag=${flag}")
endforeach()
set(_tb_bad_input_families "tb-bench|tb-bench-pack|tb-soak" tb-redistribute settings tb-fft tb-fftw-mpi tb-beff tb-ptrans
    tb-model "run.py|launch.py|report.py|tune.py|platform_network.py|model_vs_smpi.py|build.sh")
foreach(family IN LISTS _tb_bad_input_families)
  string(REGEX REPLACE "[|].*" "" _tb_name "${family}")
  if(_tb_name STREQUAL "run.py")
    set(_tb_name python)
  endif()
  add_test(NAME bad-input.${_tb_name}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/bad_input.py --bin ${CMAKE_BINARY_DIR}/bin
                   --mpiexec ${MPIEXEC_EXECUTABLE} --numproc-flag=${MPIEXEC_NUMPROC_FLAG} ${_tb_bad_input_flags}
                   -k "^(${family})\\.")
  set_tests_properties(bad-input.${_tb_name} PROPERTIES TIMEOUT 600 LABELS "tool;bad-input"
                       ENVIRONMENT "${TB_MPI_TEST_ENV}" FAIL_REGULAR_EXPRESSION "FAIL:")
endforeach()
# A case whose tool is in no family above would never run: this test names it.
add_test(NAME bad-input.every-case-in-a-family
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/bad_input.py --families ${_tb_bad_input_families})
set_tests_properties(bad-input.every-case-in-a-family PROPERTIES TIMEOUT 60 LABELS "bad-input")
