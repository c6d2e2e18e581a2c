# What of a target's architecture list runs on one GPU (GDNBENCH_FOR_GPU, CMakeLists.txt): the
# list's own cubin for that compute capability where it has one (90 -> 90-real, 90a-real stays),
# else the PTX of the newest plain architecture below it (an entry without -real, so one that
# carries PTX: 80 -> 80-virtual, which the driver compiles at load; never an "a" target's), else
# the whole list. tests/cmake/archs_for_gpu_test.cmake checks it.
function(gdn_archs_for_gpu out archs gpu)
  set(native "")
  set(below 0)
  foreach(arch IN LISTS archs)
    string(REGEX MATCH "^[0-9]+a?" code "${arch}")
    string(REGEX MATCH "^[0-9]+" number "${arch}")
    if(number EQUAL gpu)
      set(native "${code}-real")
    elseif(code STREQUAL number AND NOT arch MATCHES "-real$" AND number LESS gpu AND number GREATER below)
      set(below ${number})
    endif()
  endforeach()
  if(native)
    set(${out} "${native}" PARENT_SCOPE)
  elseif(below GREATER 0)
    set(${out} "${below}-virtual" PARENT_SCOPE)
  else()
    set(${out} "${archs}" PARENT_SCOPE)
  endif()
endfunction()
