# cmake -P tests/cmake/archs_for_gpu_test.cmake: the architectures GDNBENCH_FOR_GPU keeps of each
# list (cmake/archs_for_gpu.cmake), for the lists cmake/variants.cmake uses.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/archs_for_gpu.cmake)

function(expect archs gpu want)
  gdn_archs_for_gpu(got "${archs}" ${gpu})
  if(NOT got STREQUAL want)
    message(SEND_ERROR "archs '${archs}' for GPU ${gpu}: got '${got}', expected '${want}'")
  endif()
endfunction()

expect("75;80;90;100;120" 90 "90-real")        # a family with a cubin for Hopper
expect("80;90;100;120" 120 "120-real")
expect("90a-real" 90 "90a-real")              # prefill/sm90
expect("90a-real" 100 "90a-real")             # nothing of it runs on sm_100: the list as it is
expect("80" 90 "80-virtual")                  # prefill/sm80 on a Hopper: its compute_80 PTX
expect("80;86-real;89-real;120-real" 90 "80-virtual")  # SASS-only entries carry no PTX
expect("80;86-real;89-real;120-real" 89 "89-real")
expect("75" 90 "75-virtual")                  # prefill/sm75_legacy
expect("75;80;90;100;120" 86 "80-virtual")
