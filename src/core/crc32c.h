/* CRC-32C (Castagnoli): the checksum of plan files' sections. It is there to
 * catch accidental damage (a bad copy, a truncated download, a flipped bit
 * on disk), not tampering; it runs at memory speed with SSE4.2's crc32
 * instruction, so checking a plan's weights costs little next to reading
 * them. */
#ifndef KORCH_CORE_CRC32C_H
#define KORCH_CORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues `crc` (0 to start) over size bytes. korch_crc32c(0, "123456789",
 * 9) == 0xe3069283, the standard check value. */
uint32_t korch_crc32c(uint32_t crc, const void *data, size_t size);

#endif
