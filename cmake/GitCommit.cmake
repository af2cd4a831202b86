# Records the git commit of the source tree in every tool's metadata. The commit is read at
# build time (not only at configure time) so a rebuild after a commit reports the new one.
set(TB_GIT_COMMIT_CPP ${CMAKE_BINARY_DIR}/generated/git_commit.cpp)
add_custom_target(tb_git_commit
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -DOUTPUT=${TB_GIT_COMMIT_CPP}
          -P ${CMAKE_SOURCE_DIR}/cmake/WriteGitCommit.cmake
  BYPRODUCTS ${TB_GIT_COMMIT_CPP}
  COMMENT "Reading the git commit")
