#!/bin/sh
# Makes kjv.txt.gz, the embedded default corpus (SPEC §6): the King James
# Bible (public domain) as Debian's bible-kjv prints it, gzip -9 -n (no name
# or time stamp, so the file is the same on every run).
#   sudo apt-get install bible-kjv && sh make_kjv.sh
set -eu
cd "$(dirname "$0")"
bible "Gen1:1-Rev22:21" | gzip -9 -n > kjv.txt.gz
ls -l kjv.txt.gz
