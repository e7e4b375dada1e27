/*
 * A fuzz target: libFuzzer's entry point. `make fuzz` links each target with
 * libFuzzer (clang, ASan, UBSan); `make check` links it with replay.c, which
 * feeds it every input of its corpus (tests/fuzz/corpus/NAME: seeds, and
 * each input that ever crashed it).
 */
#ifndef NOPFS_FUZZ_H
#define NOPFS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
