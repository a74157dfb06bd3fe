# cmake -DLIB=<libhyperstream.a> -DNM=<nm> -DOUT=<file.rsp> -DSYMS=a,b -P optional_symbols.cmake
# Writes "-Wl,-u,<sym>" for every symbol of SYMS that LIB defines (see CMakeLists.txt).
execute_process(COMMAND ${NM} -g --defined-only ${LIB}
                OUTPUT_VARIABLE defined ERROR_QUIET RESULT_VARIABLE rc)
string(REPLACE "," ";" SYMS "${SYMS}")
set(flags "")
if(rc EQUAL 0)
  foreach(sym ${SYMS})
    if(defined MATCHES "[ \t][TW][ \t]${sym}\n")
      string(APPEND flags "-Wl,-u,${sym}\n")
    endif()
  endforeach()
endif()
file(WRITE ${OUT}.tmp "${flags}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
