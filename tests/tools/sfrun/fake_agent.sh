#!/bin/sh
# A stand-in for ssh in sfrun's tests: `fake_agent.sh LOG HOST LINE` appends its arguments to
# LOG (so a test can check what an agent's command line reveals) and runs the shell command line
# LINE here, as `ssh HOST LINE` would run it on HOST.
log=$1 host=$2
shift 2
printf '%s\n' "$host $*" >>"$log"
exec sh -c "$1"
