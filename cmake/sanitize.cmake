# GDNBENCH_SANITIZE: the host code built with AddressSanitizer and UndefinedBehaviorSanitizer
# (scripts/sanitize.sh builds such a tree and runs the CPU suite in it). C++ translation units are
# instrumented; CUDA ones compile as usual (their device code cannot be, and their host side only
# launches) and link with the sanitizer runtimes. libstdc++ is linked dynamically there, so the
# sanitizer sees every operator new and delete.
option(GDNBENCH_SANITIZE "Build the host code with ASan and UBSan (a test build, never timed)" OFF)
if(GDNBENCH_SANITIZE)
  set(GDN_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${GDN_SANITIZE_FLAGS}>")
  add_link_options(-fsanitize=address,undefined)
  set(GDNBENCH_PORTABLE OFF CACHE BOOL "" FORCE)
endif()
