# A stand-in for a rank of an elastic job, for sfrun's elastic tests: it says its SF_ELASTIC, and
# plays its part of MODE, printing the membership lines real survivors print (docs/elastic.md).
#   bash elastic_rank.sh MODE JOB_LOGS SFRUN_ERR
# JOB_LOGS is the job's log dir (LOG_DIR/JOB), SFRUN_ERR the file sfrun's stderr goes to: a
# survivor notices a loss only after it happened, so it waits for sfrun's line about it.
#   goes-on       3 ranks: rank 1 dies of SIGKILL; ranks 0 and 2 go on as generation 1 and exit 0
#   two-losses    4 ranks: rank 1 dies (generation 1: 0,2,3), then rank 3 (generation 2: 0,2)
#   member-fails  goes-on, but rank 2 exits 3 after the change
#   silent        3 ranks: rank 1 dies; the others print no membership line and exit 0
#   frozen        4 ranks: rank 1 stops itself (SIGSTOP), rank 3 leaves with an error; ranks 0
#                 and 2 go on without both and exit 0
# With --max-restarts (a replacement has SF_ELASTIC_JOIN, which it says), 4 ranks; rank 0 first
# prints a join line of generation 0, then rank 2 exits 1; ranks 0, 1 and 3 go on as generation
# 1 and rank 0 prints its join line, `join generation 1 at ipc://JOB_LOGS/door.1`:
#   rejoin          the replacement of rank 2 joins: generation 2 is 0,1,3,2; all exit 0
#   no-replacement  nobody waits for a replacement: the survivors exit 0 a second later
#   replacement-fails  the replacement given door.1 exits 3; rank 0 prints a join line of
#                   generation 1 again (door.stale), then one of generation 2 (door.2); the
#                   replacement given that exits 4; the survivors exit 0
#   never-joins     the replacement waits forever; the survivors exit 0 once it has started
#   dead-door       rank 0 exits 1 once the replacement given door.1 has started, which then waits
#                   there forever; ranks 1 and 3 go on as generation 2 (1,3) and rank 1 prints
#                   `join generation 2 at .../door.2`; the replacements given door.2 (rank 2's
#                   again, and rank 0's) join in generations 3 and 4; all exit 0
#   door-kept       rank 3 exits 1 once the replacement of rank 2 has started; ranks 0 and 1 go on
#                   as generation 2 (0,1), rank 0 keeps its door: `join generation 2 at .../door.1`;
#                   the replacements join in generations 3 and 4 (2, then 3); all exit 0
# Every rank first says that it trains elastic, as train_elastic does, and waits until sfrun has
# read it; except in
#   not-elastic     3 ranks that never say it: rank 1 dies of SIGKILL, the others wait to be stopped
set -u
mode=$1 logs=$2 err=$3
rank=$SF_RANK
echo "rank $rank: SF_ELASTIC=${SF_ELASTIC-unset}"
[[ -n ${SF_ELASTIC_JOIN-} ]] && echo "rank $rank: SF_ELASTIC_JOIN=$SF_ELASTIC_JOIN"

# await_in FILE TEXT: until FILE has TEXT.
await_in() {
  local i
  for ((i = 0; i < 300; i++)); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "elastic_rank: rank $rank: '$2' never came to $1" >&2
  exit 99
}
# await TEXT: until sfrun's stderr has TEXT.
await() { await_in "$err" "$1"; }
# door GENERATION NAME: rank 0's join line (this rank is rank 0 of its world), after a logger's
# prefix as a real rank's may have.
door() { echo "[I rank $rank] shardflow elastic: join generation $1 at ipc://$logs/door.$2" >&2; }
# await_frozen: until rank 1 is stopped (state T).
await_frozen() {
  local i pid
  for ((i = 0; i < 300; i++)); do
    pid=$(cat "$logs/rank.1/pid" 2>/dev/null) &&
      [[ $(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) == T ]] && return 0
    sleep 0.1
  done
  echo "elastic_rank: rank $rank: rank 1 never stopped" >&2
  exit 99
}
# changed GENERATION LOST MEMBERS OLD_SIZE: this rank's membership line.
changed() {
  local members=$3 new=0 r
  for r in ${members//,/ }; do
    [[ $r == "$rank" ]] && break
    new=$((new + 1))
  done
  echo "shardflow elastic: generation $1: $2 (test); detected at 00:00:00.000; members $members" \
    "($4 -> $(($(tr -cd , <<<"$members" | wc -c) + 1)) ranks; this rank $rank -> $new); rolled back to step 0;" \
    "recovered in 0.001 s" >&2
}

if [[ $mode == not-elastic ]]; then
  [[ $rank == 1 ]] && kill -KILL $$
  exec sleep 60
fi
echo "[I rank $rank] shardflow elastic: rank $rank of $SF_WORLD_SIZE trains elastic (${SF_ELASTIC-})" >&2
await_in "$logs/rank.$rank/stderr" "trains elastic"

# A replacement (restarts).
if [[ -n ${SF_ELASTIC_JOIN-} ]]; then
  case $mode in
    rejoin)
      await "sfrun: shardflow elastic: generation 2:"
      exit 0
      ;;
    no-replacement) exit 0 ;;
    replacement-fails) [[ $SF_ELASTIC_JOIN == */door.1 ]] && exit 3 || exit 4 ;;
    never-joins) exec sleep 60 ;;
    dead-door | door-kept)
      # In dead-door, door.1's rank 0 dies: nobody will admit this one there.
      [[ $mode == dead-door && $SF_ELASTIC_JOIN == */door.1 ]] && exec sleep 60
      await "sfrun: shardflow elastic: generation 4:"
      exit 0
      ;;
  esac
fi

case $mode/$rank in
  rejoin/2 | no-replacement/2 | replacement-fails/2 | never-joins/2 | dead-door/2 | door-kept/2)
    await_in "$logs/rank.0/stderr" "join generation 0"
    exit 1
    ;;
  rejoin/* | no-replacement/* | replacement-fails/* | never-joins/* | dead-door/* | door-kept/*)
    [[ $rank == 0 ]] && door 0 0
    await "sfrun: rank 2 exited with code 1"
    changed 1 "lost rank 2" 0,1,3 4
    [[ $rank == 0 ]] && door 1 1
    case $mode in
      rejoin)
        await_in "$logs/rank.2/stdout" "rank 2: SF_ELASTIC_JOIN="
        changed 2 "joined rank 2" 0,1,3,2 3
        await "sfrun: shardflow elastic: generation 2:"
        ;;
      no-replacement) sleep 1 ;;
      replacement-fails)
        await "sfrun: the replacement for rank 2 exited with code 3 before it joined"
        if [[ $rank == 0 ]]; then
          door 1 stale
          sleep 0.5
          door 2 2
        fi
        await "sfrun: the replacement for rank 2 exited with code 4 before it joined"
        ;;
      never-joins) await_in "$logs/rank.2/stdout" "rank 2: SF_ELASTIC_JOIN=" ;;
      dead-door)
        await_in "$logs/rank.2/stdout" "rank 2: SF_ELASTIC_JOIN="
        [[ $rank == 0 ]] && exit 1
        await "sfrun: rank 0 exited with code 1"
        changed 2 "lost rank 0" 1,3 3
        [[ $rank == 1 ]] && door 2 2
        await_in "$logs/rank.2/stdout" "rank 2: SF_ELASTIC_JOIN=ipc://$logs/door.2"
        await_in "$logs/rank.0/stdout" "rank 0: SF_ELASTIC_JOIN=ipc://$logs/door.2"
        changed 3 "rank 2 joined" 1,3,2 2
        changed 4 "rank 0 joined" 1,3,2,0 3
        await "sfrun: shardflow elastic: generation 4:"
        ;;
      door-kept)
        await_in "$logs/rank.2/stdout" "rank 2: SF_ELASTIC_JOIN="
        [[ $rank == 3 ]] && exit 1
        await "sfrun: rank 3 exited with code 1"
        changed 2 "lost rank 3" 0,1 3
        [[ $rank == 0 ]] && door 2 1
        # Rank 3's replacement starts only after sfrun has read that line: rank 2's is still where it was.
        await_in "$logs/rank.3/stdout" "rank 3: SF_ELASTIC_JOIN="
        changed 3 "rank 2 joined" 0,1,2 2
        changed 4 "rank 3 joined" 0,1,2,3 3
        await "sfrun: shardflow elastic: generation 4:"
        ;;
    esac
    exit 0
    ;;
  goes-on/1 | two-losses/1 | member-fails/1 | silent/1) kill -KILL $$ ;;
  goes-on/* | member-fails/*)
    await "sfrun: rank 1 exited with"
    changed 1 "lost rank 1" 0,2 3
    [[ $mode/$rank == member-fails/2 ]] && exit 3
    exit 0
    ;;
  two-losses/*)
    await "sfrun: rank 1 exited with"
    changed 1 "lost rank 1" 0,2,3 4
    [[ $rank == 3 ]] && kill -KILL $$
    await "sfrun: rank 3 exited with"
    changed 2 "lost rank 3" 0,2 3
    exit 0
    ;;
  silent/*)
    await "sfrun: rank 1 exited with"
    exit 0
    ;;
  frozen/1) kill -STOP $$ ;;
  frozen/3)
    await_frozen
    echo "this rank was removed from the job" >&2
    exit 1
    ;;
  frozen/*)
    await_frozen
    await "sfrun: rank 3 exited with"
    changed 1 "lost ranks 1, 3" 0,2 4
    exit 0
    ;;
esac
echo "elastic_rank: no part for rank $rank in mode $mode" >&2
exit 98
