// Where the tests find the fixtures and the nvfp4 binary. The paths are absolute and differ per
// checkout, so they live in one generated source (CMakeLists.txt: test_paths.cpp) rather than in
// -D flags: the other test objects then compile to the same bits in every clone, and ccache
// (CCACHE_BASEDIR, scripts/test.sh) reuses them. Force-included into every test source.
#pragma once

const char* nvfp4_test_fixtures();
const char* nvfp4_test_binary();

#define NVFP4_FIXTURES (nvfp4_test_fixtures())
#define NVFP4_BINARY (nvfp4_test_binary())
