# tb_add_mpi_test(<target> RANKS 1 2 3 4 [TIMEOUT s] [ARGS ...] [ENVIRONMENT VAR=value ...] [VARIANT name])
# Registers one ctest per rank count, named <target>[.<variant>].np<N>, launched by the
# configured mpiexec.
# Open MPI needs --oversubscribe above the core count and explicit consent to run as root.
set(TB_MPIEXEC_FLAGS ${MPIEXEC_PREFLAGS})
set(TB_MPI_TEST_ENV "")
if(TB_MPI_FLAVOR STREQUAL "openmpi")
  list(APPEND TB_MPIEXEC_FLAGS --oversubscribe)
  list(APPEND TB_MPI_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
endif()

function(tb_add_mpi_test target)
  cmake_parse_arguments(ARG "" "TIMEOUT;VARIANT" "RANKS;ARGS;ENVIRONMENT" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  foreach(n IN LISTS ARG_RANKS)
    if(ARG_VARIANT)
      set(name ${target}.${ARG_VARIANT}.np${n})
    else()
      set(name ${target}.np${n})
    endif()
    add_test(NAME ${name}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n} ${TB_MPIEXEC_FLAGS}
                     $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS} ${ARG_ARGS})
    set_tests_properties(${name} PROPERTIES
      TIMEOUT ${ARG_TIMEOUT}
      LABELS "mpi;np${n}"
      ENVIRONMENT "${TB_MPI_TEST_ENV};${ARG_ENVIRONMENT}")
  endforeach()
endfunction()
