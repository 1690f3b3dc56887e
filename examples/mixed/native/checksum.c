#include "checksum.h"

uint32_t checksum(const char *text) {
    uint32_t hash = 2166136261u;
    for (const char *p = text; *p != '\0'; p++) {
        hash ^= (uint8_t)*p;
        hash *= 16777619u;
    }
    return hash;
}
