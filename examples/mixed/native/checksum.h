/* A checksum of product ids, for the shop's barcode labels. */
#ifndef SHOP_CHECKSUM_H
#define SHOP_CHECKSUM_H

#include <stdint.h>

/* The FNV-1a hash of a NUL-terminated string. */
uint32_t checksum(const char *text);

#endif
