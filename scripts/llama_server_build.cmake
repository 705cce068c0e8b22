# Read by llama.cpp's configure step (CMAKE_PROJECT_INCLUDE, after each project() call) from
# scripts/build_model_server.sh: a shorter compile of llama-server. ggml (its own project: the tensor kernels, where
# the model's arithmetic runs) keeps the build type's -O3. Once the whole tree is configured, the targets below get a
# lower level, which comes last on their compile lines and so wins, and the ones heavy with JSON and templates are
# compiled a few files at a time. docs/models.md has the times and the speed of the result.
if(PROJECT_NAME STREQUAL "llama.cpp")
    function(pagegraph_quicker_build)
        # never run by pagegraph: images and audio (mtmd), the bundled web page
        foreach(target mtmd llama-ui)
            if(TARGET ${target})
                set_property(TARGET ${target} APPEND PROPERTY COMPILE_OPTIONS -O0)
            endif()
        endforeach()
        # once per request or per token, not per weight: HTTP, JSON, chat templates, grammars, the model's graph
        foreach(target llama llama-common server-context llama-server-impl llama-server cpp-httplib)
            if(TARGET ${target})
                set_property(TARGET ${target} APPEND PROPERTY COMPILE_OPTIONS -O1)
            endif()
        endforeach()
        # one compile per few files instead of per file: their heavy headers (JSON, templates) are read once
        foreach(target llama-common server-context llama-server-impl)
            if(TARGET ${target})
                set_property(TARGET ${target} PROPERTY UNITY_BUILD ON)
            endif()
        endforeach()
        # specialises templates other files of its batch would already have instantiated
        set_source_files_properties(common/json.cpp TARGET_DIRECTORY llama-common PROPERTIES
            SKIP_UNITY_BUILD_INCLUSION ON)
    endfunction()
    cmake_language(DEFER CALL pagegraph_quicker_build)
endif()
