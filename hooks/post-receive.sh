#!/bin/sh
# docdex post-receive hook: installed by `docdex hook install`, removed by `docdex hook uninstall`.
# `docdex source set` writes it again when a source's branch, refs or location change.
#
# For each pushed branch or tag a docdex source tracks it files a request in the data
# directory's queue, makes sure a worker runs, and returns at once: the push never waits for
# indexing and never fails because of docdex. Plain sh and no Python on the push's path, so it
# costs a few milliseconds (docs/adr/0005-hook-and-worker.md). Every push gets one line
# saying what docdex did: what it queued, or why it queued nothing. A repository's first push
# is the one exception to "no Python": a source whose branch the repository lacks takes the
# first branch pushed (HEAD is pointed at it, as a forge does for a new repository; a source
# with a branch of its own is changed by `docdex source set`, which writes this hook again).
# An earlier hook, if any, was kept as post-receive.docdex-chained: it runs first, with the
# same input, and its exit status is ours.

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

docdex_leave_git() { # in a subshell: what docdex runs is no part of the pushed repository
    unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
        GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_QUARANTINE_PATH GIT_PUSH_OPTION_COUNT
    cd /
}

docdex_spawn_worker() {
    log="$DOCDEX_DATA/state/worker.log"
    (
        docdex_leave_git || exit 0
        set -- -I -m docdex.cli --data "$DOCDEX_DATA" worker --detach \
            --idle-exit "$DOCDEX_IDLE_EXIT"
        if command -v setsid >/dev/null 2>&1; then
            exec setsid "$DOCDEX_PYTHON" "$@"
        fi
        exec "$DOCDEX_PYTHON" "$@"
    ) </dev/null >>"$log" 2>&1 &
}

# --- a repository's first push -----------------------------------------------------------

docdex_first_push() { # sources whose branch the repository lacks take the first one pushed
    first="" created=" "
    while read -r old new ref; do
        case "$ref" in refs/heads/*) ;; *) continue ;; esac
        case "$old" in *[!0]*) continue ;; esac # the branch was there before this push
        case "$new" in *[!0]*) ;; *) continue ;; esac
        created="$created${ref#refs/heads/} "
        [ -n "$first" ] || first=${ref#refs/heads/}
    done <<EOF
$input
EOF
    [ -n "$first" ] || return 0 # no new branch (an ordinary push): nothing more to look at
    lacking=""
    for entry in $DOCDEX_SOURCES; do
        case "$entry" in *=*) ;; *) continue ;; esac
        branch=${entry#*=}
        branch=${branch#refs/heads/}
        [ -n "$branch" ] || branch=$head_branch
        case "$created" in *" $branch "*) continue ;; esac
        [ -n "$branch" ] && [ -f "refs/heads/$branch" ] && continue # loose: no git to ask
        git rev-parse -q --verify "refs/heads/$branch" >/dev/null 2>&1 && continue
        lacking="$lacking $entry"
    done
    [ -n "$lacking" ] || return 0
    for existing in $(git for-each-ref --format='%(refname)' refs/heads/); do
        case "$created" in *" ${existing#refs/heads/} "*) ;; *) return 0 ;; esac # not the first
    done
    for entry in $lacking; do
        docdex_take_first "${entry%%=*}" "${entry#*=}"
    done
}

docdex_take_first() { # source value ("" or refs/heads/BRANCH): it indexes $first from now on
    if [ -z "$2" ]; then
        case "$adopted" in *" HEAD "*) return ;; esac
        was=$head_branch
        git symbolic-ref HEAD "refs/heads/$first" || return
        head_branch=$first adopted="$adopted HEAD "
        notes="$notes; HEAD named $was, a branch nobody pushed: it names $first now"
        return
    fi
    if docdex_set_branch "$1" "$first"; then
        sources=""
        for entry in $DOCDEX_SOURCES; do
            [ "$entry" = "$1=$2" ] && entry="$1=refs/heads/$first"
            sources="$sources${sources:+ }$entry"
        done
        DOCDEX_SOURCES=$sources
        notes="$notes; $1 indexed ${2#refs/heads/}, a branch this repository lacks: it indexes"
        notes="$notes $first now (docdex.toml changed)"
    elif [ -x "$DOCDEX_PYTHON" ]; then
        notes="$notes; docdex could not switch $1 to $first ($DOCDEX_DATA/state/worker.log says why)"
    else
        notes="$notes; docdex could not switch $1 to $first: $DOCDEX_PYTHON is gone"
    fi
}

docdex_set_branch() { # source branch, by `docdex source set` (which rewrites this hook too)
    [ -x "$DOCDEX_PYTHON" ] || return 1
    (
        docdex_leave_git || exit 1
        exec "$DOCDEX_PYTHON" -I -m docdex.cli --data "$DOCDEX_DATA" source set "$1" \
            --branch="$2" # one word, even for a branch whose name starts with a dash
    ) </dev/null >>"$DOCDEX_DATA/state/worker.log" 2>&1
}

# --- a push no source indexes ------------------------------------------------------------

docdex_indexes() { # what each source indexes
    said=""
    for entry in $DOCDEX_SOURCES; do
        case "$entry" in
        *=*)
            branch=${entry#*=}
            branch=${branch#refs/heads/}
            [ -n "$branch" ] || branch="$head_branch (HEAD's branch)"
            said="$said${said:+, }${entry%%=*} indexes $branch"
            ;;
        *) said="$said + refs ${entry#*:}" ;;
        esac
    done
    [ -n "$said" ] || said="no docdex source tracks this repository any more"
    printf '%s' "$said"
}

docdex_not_indexed() { # the line for a push none of the sources matched
    first_source=${DOCDEX_SOURCES%%[=:]*}
    if [ -z "$first_source" ]; then
        hint=" (\`docdex hook uninstall $(pwd)\` removes this hook)"
    elif [ -n "$missed_branch" ]; then
        hint="; run \`docdex source set $first_source --branch $missed_branch\` to index it instead"
    elif [ -n "$missed_tag" ]; then
        hint="; tags are indexed by a source's refs patterns (\`docdex source set $first_source --ref PATTERN\`)"
    else
        hint=""
    fi
    verb=is
    case "$missed" in *,*) verb=are ;; esac
    docdex_say "$missed $verb not indexed here: $(docdex_indexes)$hint$notes"
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
    filed="" missed="" missed_branch="" missed_tag="" notes="" adopted=" "
    head_branch=$(docdex_head_branch)
    set -f # patterns are matched, never expanded against the repository's files
    docdex_first_push
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
        [ "$done_for" = " " ] || continue
        docdex_missed
    done <<EOF
$input
EOF
    if [ -z "$filed" ]; then
        if [ -n "$missed" ]; then
            docdex_not_indexed
        else
            docdex_say "nothing to index: this push changed no branch or tag$notes"
        fi
        return
    fi
    if [ ! -x "$DOCDEX_PYTHON" ]; then
        docdex_say "queued$filed, but cannot start the indexer: $DOCDEX_PYTHON is gone" \
            "(venv moved?); run \`docdex hook install\` again$notes"
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
    docdex_say "queued for indexing:$filed$notes"
}

docdex_missed() { # the pushed $what $short that no source selects
    case "$new" in
    *[!0]*)
        missed="$missed${missed:+, }$what $short"
        if [ "$kind" = heads ]; then
            [ -n "$missed_branch" ] || missed_branch=$short
        else
            [ -n "$missed_tag" ] || missed_tag=$short
        fi
        ;;
    *) missed="$missed${missed:+, }$what $short (deleted)" ;;
    esac
}

docdex_main
exit $status
