#!/bin/sh
# docdex post-receive hook: installed by `docdex hook install`, removed by `docdex hook uninstall`.
# `docdex source set` writes it again when a source's branch, refs or location change.
#
# For each pushed branch or tag a docdex source tracks it files a request in the data
# directory's queue, makes sure a worker runs, and returns at once: the push never waits for
# indexing and never fails because of docdex. Plain sh and no Python on the push's path, so it costs a few
# milliseconds (docs/adr/0005-hook-and-worker.md). An earlier hook, if any, was kept as
# post-receive.docdex-chained: it runs first, with the same input, and its exit status is ours.

DOCDEX_PYTHON=@PYTHON@
DOCDEX_DATA=@DATA@
# name=refs/heads/BRANCH (a source's branch; name= : the one HEAD names), then one
# name:PATTERN per pattern of its `refs` (a short name selects branches and tags alike)
DOCDEX_SOURCES=@SOURCES@
DOCDEX_IDLE_EXIT=@IDLE_EXIT@

input=$(cat)
status=0
chained="$(dirname "$0")/post-receive.docdex-chained"
if [ -e "$chained" ]; then
    printf '%s\n' "$input" | "$chained"
    status=$?
fi

docdex_say() {
    printf 'docdex: %s\n' "$*" >&2
}

docdex_head_branch() {
    head=""
    read -r head <HEAD 2>/dev/null
    case "$head" in
    "ref: refs/heads/"*) printf '%s' "${head#ref: refs/heads/}" ;;
    esac
}

docdex_glob() { # pattern name: sh's `case` is the indexer's fnmatch (`*` matches '/' too)
    case "$2" in
    $1) return 0 ;;
    esac
    return 1
}

docdex_selects() { # pattern kind(heads|tags) name: does the pattern select refs/kind/name?
    case "$1" in
    "") [ "$2" = heads ] && [ "$3" = "$head_branch" ] ;;
    refs/heads/*) [ "$2" = heads ] && docdex_glob "${1#refs/heads/}" "$3" ;;
    refs/tags/*) [ "$2" = tags ] && docdex_glob "${1#refs/tags/}" "$3" ;;
    *) docdex_glob "$1" "$3" ;;
    esac
}

docdex_file() { # source ref commit
    stamp=$(date -u '+%s%N %Y-%m-%dT%H:%M:%SZ')
    ns=${stamp%% *}
    case "$ns" in *[!0-9]*) ns="${ns%N}000000000" ;; esac # no %N (BSD date)
    docdex_n=$((docdex_n + 1))
    id=$(printf '%020d-%x%02x' "$ns" "$$" "$docdex_n")
    ref=$2
    case "$ref" in *'"'*) ref="" ;; esac # JSON-safe: the worker does not need it
    printf '{"id":"%s","source":"%s","origin":"hook","requested_at":"%s","ref":"%s","commit":"%s"}\n' \
        "$id" "$1" "${stamp#* }" "$ref" "$3" >"$queue/.tmp-$id" &&
        mv -f "$queue/.tmp-$id" "$queue/$id.json"
}

docdex_spawn_worker() {
    log="$DOCDEX_DATA/state/worker.log"
    (
        unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
            GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_QUARANTINE_PATH GIT_PUSH_OPTION_COUNT
        cd / || exit 0
        set -- -I -m docdex.cli --data "$DOCDEX_DATA" worker --detach \
            --idle-exit "$DOCDEX_IDLE_EXIT"
        if command -v setsid >/dev/null 2>&1; then
            exec setsid "$DOCDEX_PYTHON" "$@"
        fi
        exec "$DOCDEX_PYTHON" "$@"
    ) </dev/null >>"$log" 2>&1 &
}

docdex_main() {
    if [ ! -f "$DOCDEX_DATA/DOCDEX" ]; then
        docdex_say "data directory $DOCDEX_DATA is missing; this push was not indexed" \
            "(run \`docdex hook install\` again)"
        return
    fi
    queue="$DOCDEX_DATA/state/queue"
    [ -d "$queue" ] || mkdir -p "$queue" || return
    docdex_n=0
    filed=""
    head_branch=$(docdex_head_branch)
    set -f # patterns are matched, never expanded against the repository's files
    while read -r old new ref; do
        case "$ref" in
        refs/heads/*) kind=heads what=branch ;;
        refs/tags/*) kind=tags what=tag ;;
        *) continue ;;
        esac
        short=${ref#refs/"$kind"/}
        done_for=" "
        for entry in $DOCDEX_SOURCES; do
            name=${entry%%[=:]*}
            case "$done_for" in *" $name "*) continue ;; esac # one request per source
            docdex_selects "${entry#*[=:]}" "$kind" "$short" || continue
            docdex_file "$name" "$ref" "$new" || continue
            done_for="$done_for$name "
            case "${entry#"$name"}" in =*) which="" ;; *) which=" ($what $short)" ;; esac
            case "$new" in
            *[!0]*) filed="$filed $name@$(printf '%.12s' "$new")$which" ;;
            *) filed="$filed $name($what $short deleted)" ;;
            esac
        done
    done <<EOF
$input
EOF
    [ -n "$filed" ] || return
    if [ ! -x "$DOCDEX_PYTHON" ]; then
        docdex_say "queued$filed, but cannot start the indexer: $DOCDEX_PYTHON is gone" \
            "(venv moved?); run \`docdex hook install\` again"
        return
    fi
    # flock(1) tells us whether a worker holds its lock (exit 75); where it is missing or
    # fails otherwise we start one anyway: a spare worker finds the lock taken and exits.
    busy=0
    if command -v flock >/dev/null 2>&1; then
        flock -n -E 75 "$DOCDEX_DATA/state/worker.lock" true 2>/dev/null
        [ $? -ne 75 ] || busy=1
    fi
    [ "$busy" = 1 ] || docdex_spawn_worker
    docdex_say "queued for indexing:$filed"
}

docdex_main
exit $status
