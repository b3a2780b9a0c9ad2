#!/bin/sh
# SPDX-License-Identifier: MIT
# t_cupti_exports: libndmem_cupti.so exports InitializeInjection and nothing else. The CUDA driver
# dlopens it into every CUDA process of the job: any other global symbol could bind in place of
# the program's own (or CUPTI's), and the fold's functions are internal.
# usage: t_cupti_exports.sh LIBNDMEM_CUPTI
got=$(nm -D --defined-only "$1" | awk '$2 ~ /^[TWiVBDGRS]$/ {print $3}' | sed 's/@.*//' | sort |
  tr '\n' ' ')
if [ "$got" != "InitializeInjection " ]; then
  echo "exported symbols differ" >&2
  echo "got:  $got" >&2
  echo "want: InitializeInjection " >&2
  exit 1
fi
