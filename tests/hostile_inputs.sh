#!/bin/sh
# hostile_inputs.sh XSTAGE SOURCE: hostile inputs to the command, each a
# reproducer of a failure seen on the surfaces added since the last
# review: output files, compact programs, tables and --sensitivity,
# validate, generated headers and names. Each must exit 0 with the
# correct answer, or exit 2 with a message naming the file, line, column
# or flag, within seconds, losing no byte of a file it did not own and
# leaving no temporary file. Prints "ok NAME" or "FAIL NAME: why" for
# each, then how many passed; exits 1 when any failed.
set -u
x=$1
src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$src" || exit 1
P=examples/two-bursts.json
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1: $2"; }
# run NAME LIMIT_S CMD...: status in $rc, stdout in $dir/out, stderr in $dir/err
run() {
    limit=$1
    shift
    timeout "$limit" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
}
# expect NAME RC PATTERN LIMIT CMD...: exit RC within LIMIT s and PATTERN
# (grep -E) in stderr (RC 2) or stdout (RC 0)
expect() {
    name=$1 want=$2 pat=$3 limit=$4
    shift 4
    run "$limit" "$@"
    f="$dir/out"
    [ "$want" = 2 ] && f="$dir/err"
    if [ "$rc" = 124 ]; then
        bad "$name" "still running after ${limit}s"
    elif [ "$rc" != "$want" ]; then
        bad "$name" "exit $rc, want $want: $(head -c 300 "$dir/err")"
    elif ! grep -qE -- "$pat" "$f"; then
        bad "$name" "no /$pat/ in: $(head -c 300 "$f")"
    else
        ok "$name"
    fi
}

# ---- output files ----
printf 'kept\n' >"$dir/log"
"$x" predict --program $P --profile h100-nvlink --svg /dev/stdout >>"$dir/log" 2>/dev/null
if [ "$(head -1 "$dir/log")" = kept ] && grep -q '</svg>' "$dir/log"; then
    ok stdout-append
else
    bad stdout-append "the log lost what it held: $(head -c 80 "$dir/log")"
fi
printf 'kept\n' >"$dir/log"
"$x" predict --program $P --profile h100-nvlink --svg "$dir/log" >>"$dir/log" 2>/dev/null
if [ "$(head -1 "$dir/log")" = kept ] && grep -q '</svg>' "$dir/log"; then
    ok same-file-append
else
    bad same-file-append "the log lost what it held"
fi
printf 'old\n' >"$dir/m.svg"
chmod 600 "$dir/m.svg"
"$x" predict --program $P --profile h100-nvlink --svg "$dir/m.svg" >/dev/null 2>&1
m=$(stat -c %a "$dir/m.svg")
[ "$m" = 600 ] && ok mode-kept || bad mode-kept "mode $m, was 600"
if [ "$(id -u)" = 0 ]; then
    chown 4321:4322 "$dir/m.svg"
    "$x" predict --program $P --profile h100-nvlink --svg "$dir/m.svg" >/dev/null 2>&1
    o=$(stat -c %u:%g "$dir/m.svg")
    [ "$o" = 4321:4322 ] && ok owner-kept || bad owner-kept "owner $o, was 4321:4322"
fi
# a write that fails half way (the file size limit)
mkdir "$dir/w"
printf 'old\n' >"$dir/w/f.svg"
(trap '' XFSZ; ulimit -f 4; exec "$x" predict --program $P --profile h100-nvlink --svg "$dir/w/f.svg") >/dev/null 2>&1
left=$(ls "$dir/w" | grep -c tmp)
[ "$left" = 0 ] && [ "$(cat "$dir/w/f.svg")" = old ] && ok failed-write-cleans ||
    bad failed-write-cleans "$left temporary files, the file: $(head -c 20 "$dir/w/f.svg")"
# a signal in the middle of a write: 70 MB of SVG, the command stopped
# while its temporary file exists, then signalled
printf '{"name":"big","workers":[{"name":"w","count":4,"ops":[{"repeat":250000,"ops":[{"compute":1e-6}]}]}]}\n' >"$dir/big.json"
for sig in INT TERM; do
    caught=0 tries=0
    while [ $caught = 0 ] && [ $tries -lt 6 ]; do
        tries=$((tries + 1))
        rm -f "$dir/w"/*
        printf 'old\n' >"$dir/w/f.svg"
        # a job the shell starts in the background ignores SIGINT: not this one
        env --default-signal=INT,TERM "$x" predict --program "$dir/big.json" \
            --profile h100-nvlink --svg "$dir/w/f.svg" >/dev/null 2>&1 &
        pid=$!
        while kill -0 $pid 2>/dev/null; do
            if ls "$dir/w" | grep -q tmp; then
                kill -STOP $pid 2>/dev/null
                if ls "$dir/w" | grep -q tmp; then
                    caught=1
                    kill -$sig $pid
                fi
                kill -CONT $pid 2>/dev/null
                break
            fi
        done
        wait $pid 2>/dev/null
    done
    left=$(ls "$dir/w" | grep -c tmp)
    if [ $caught = 0 ]; then
        bad "sig$sig-mid-write" "never caught writing in $tries runs"
    elif [ "$left" != 0 ] || [ "$(cat "$dir/w/f.svg")" != old ]; then
        bad "sig$sig-mid-write" "$left temporary files left, the file: $(head -c 20 "$dir/w/f.svg")"
    else
        ok "sig$sig-mid-write"
    fi
done

# ---- compact programs ----
printf '{"workers":[{"name":"a","ops":[{"repeat":16777216,"ops":[{"repeat":16777216,"ops":[]}]},{"send":100}]}]}' >"$dir/empty.json"
expect empty-repeats 0 '1 worker, 1 send' 10 "$x" predict --program "$dir/empty.json" --profile h100-nvlink
id=$(printf '%02000d' 0 | tr 0 i)
printf '{"workers":[{"name":"a","count":1048576,"ops":[{"repeat":16,"ops":[{"send":100,"id":"%s"}]}]}]}' "$id" >"$dir/ids.json"
expect ids-expand 2 'ids.json:1:[0-9]+: workers\[0\]\.count: .*bytes' 10 "$x" predict --program "$dir/ids.json" --profile h100-nvlink
name=$(printf '%0300d' 0 | sed 's/0/é/g')
printf '{"workers":[{"name":"%s","ops":[{"send":100}]},{"name":"b","ops":[{"wait":"%s#0"}]}]}' "$name" "$name" >"$dir/auto.json"
expect long-auto-id 0 '2 workers, 1 send' 10 "$x" predict --program "$dir/auto.json" --profile h100-nvlink

# ---- tables and --sensitivity ----
expect table-work 2 '^xstage plan: --tokens-grid: .*GEMM tiles of planning' 10 "$x" plan megamoe --preset deepseek-v3 --profile h800-nvlink --tokens-grid 50000:60000:10
expect grid-work 2 '^xstage plan: --tokens-grid: .*GEMM tiles' 10 "$x" plan megamoe --preset deepseek-v3 --profile h800-nvlink --tokens-grid 64:65536:64
expect sensitivity-work 2 'sensitivity: .*GEMM tiles' 10 "$x" plan megamoe --preset deepseek-v3 --profile h800-nvlink --tokens 300000 --sensitivity
"$x" profiles show h800-nvlink >"$dir/many.json"
ch='"c0": {"inject_Bps": 1e11, "drain_Bps": 5e10, "capacity_B": 1e6, "latency_s": 1e-6},'
for k in 1 2 3 4 5 6 7 8 9 10 11; do ch="$ch \"c$k\": {\"inject_Bps\": 1e11, \"drain_Bps\": 5e10, \"capacity_B\": 1e6, \"latency_s\": 1e-6},"; done
sed -i "s/\"channels\": {/\"channels\": { $ch/; s/\"name\": \"h800-nvlink\"/\"name\": \"many\"/" "$dir/many.json"
expect sensitivity-rows 2 'has [0-9]+ numbers the plan reads, more than the 64 rows' 20 "$x" plan megamoe --preset deepseek-v3 --profile "$dir/many.json" --tokens 64 --sensitivity
sed 's/"lead: \([^"]*\)"/"\\u001b[31mlead: \1"/' profiles/h800-nvlink.json | sed 's/"name": "h800-nvlink"/"name": "esc"/' >"$dir/esc.json"
run 60 "$x" plan megamoe --preset deepseek-v3 --profile "$dir/esc.json" --tokens 64 --sensitivity
if [ $rc = 0 ] && ! grep -q "$(printf '\033')" "$dir/out" && grep -q 'x1b' "$dir/out"; then
    ok sensitivity-escapes
else
    bad sensitivity-escapes "exit $rc, raw control characters or none escaped"
fi
run 60 "$x" plan flashattn --preset llama3-8b --profile "$dir/esc.json" --seq 2048 --sensitivity
if [ $rc = 0 ] && ! grep -q "$(printf '\033')" "$dir/out" && grep -q 'x1b' "$dir/out"; then
    ok fa-sensitivity-escapes
else
    bad fa-sensitivity-escapes "exit $rc, raw control characters or none escaped"
fi
expect fa-sensitivity-tolerance 2 '--tolerance: expected a fraction' 10 "$x" plan flashattn --preset llama3-8b --profile h100-nvlink --sensitivity --tolerance 2
expect prefix-case 2 '--header-prefix: "MOE" has capitals' 10 "$x" plan megamoe --preset glm --profile h800-nvlink --tokens-grid 64 --emit-header "$dir/h.h" --header-prefix MOE
expect prefix-guard 2 '--header-prefix: "_stdio" begins with an underscore' 10 "$x" plan megamoe --preset glm --profile h800-nvlink --tokens-grid 64 --emit-header "$dir/h.h" --header-prefix _stdio
printf '{"preset": "glm", "tokens": 64, "name": "%s"}' "$(printf '%040d' 0 | sed 's/0/é/g')" >"$dir/name.json"
expect name-utf8-cut 0 '"preset": "(é)+"' 20 "$x" plan megamoe --config "$dir/name.json" --profile h800-nvlink --json

# ---- validate ----
# an EP row's source past 95 bytes with a two-byte character at byte 95:
# kept whole, in --json too
ephdr=$(grep -v '^#' "$src/data/published/ep.csv" | head -1)
eprow=$(grep -v '^#' "$src/data/published/ep.csv" | grep -v '^"' | sed -n 2p)
printf '%s\n%s%s%s\n' "$ephdr" "$(printf '%094d' 0 | tr 0 a)" "$(printf '\303\251')" \
    "tail,${eprow#*,}" >"$dir/epu.csv"
expect ep-source-whole 0 '"source": "a{94}.tail"' 20 "$x" validate ep --data "$dir/epu.csv" --json
hdr='source,gpu,ep,hidden,intermediate,experts,topk,shared_experts,act_dtype,weight_dtype,tokens,arm,time_us'
row='h100-nvlink,8,7168,2048,256,8,0,fp8,fp8,64,sequential'
printf '%s\ns,%s,1e-320\n' "$hdr" "$row" >"$dir/v.csv"
expect time-subnormal 2 'v\.csv:2:[0-9]+: time_us' 10 "$x" validate megamoe --data "$dir/v.csv" --json
printf '%s\ns\377,%s,100\n' "$hdr" "$row" >"$dir/v.csv"
expect source-not-utf8 2 'v\.csv:2:2: not UTF-8' 10 "$x" validate megamoe --data "$dir/v.csv" --json
printf '%s\n%s,%s,100\n' "$hdr" "$(printf '%050d' 0 | sed 's/0/é/g')" "$row" >"$dir/v.csv"
expect source-whole 0 '"source": "(é){50}"' 20 "$x" validate megamoe --data "$dir/v.csv" --json
# two 200-byte sources that differ in their last byte: two rows, each
# source whole in the text's list of sources and in --json
long=$(printf '%0199d' 0 | tr 0 s)
printf '%s\n%s1,%s,100\n%s2,%s,120\n' "$hdr" "$long" "$row" "$long" "$row" >"$dir/v.csv"
expect source-long-text 0 "\\[2\\] ${long}2" 20 "$x" validate megamoe --data "$dir/v.csv"
expect source-long-json 0 "\"source\": \"${long}2\"" 20 "$x" validate megamoe --data "$dir/v.csv" --json
printf '%s,arm\ns,%s,100,x\n' "$hdr" "$row" >"$dir/v.csv"
expect column-twice 2 'v\.csv:1:[0-9]+: column "arm" is named twice' 10 "$x" validate megamoe --data "$dir/v.csv"
printf '%s\n"s"x,%s,100\n' "$hdr" "$row" >"$dir/v.csv"
expect stray-quote 2 'v\.csv:2:4: a stray quote' 10 "$x" validate megamoe --data "$dir/v.csv"
printf '%s\ns,%s,100\n' "$hdr" "$row" >"$dir/v.csv"
expect fail-above-empty 2 '--fail-above: expected a fraction' 10 "$x" validate megamoe --data "$dir/v.csv" --fail-above ''
expect fail-above-word 2 '--fail-above: expected a fraction' 10 "$x" validate megamoe --data "$dir/v.csv" --fail-above abc
printf '\357\273\277%s\ns,%s,100\n' "$hdr" "$row" >"$dir/v.csv"
expect validate-bom 0 'validation: 1 rows' 10 "$x" validate megamoe --data "$dir/v.csv"
printf '%s\n"a\033[31mb",%s,100\n' "$hdr" "$row" >"$dir/v.csv"
run 10 "$x" validate megamoe --data "$dir/v.csv"
if [ $rc = 0 ] && ! grep -q "$(printf '\033')" "$dir/out" && grep -q 'a\\x1b' "$dir/out"; then
    ok validate-escapes
else
    bad validate-escapes "exit $rc, raw control characters or none escaped"
fi
# the published rows copied 300 times: every row measured 300 times
{ grep -v '^#' data/published/megamoe.csv | head -1
  for k in $(seq 300); do grep -v '^#' data/published/megamoe.csv | tail -n +2; done; } >"$dir/many.csv"
expect validate-copies 2 'many\.csv:[0-9]+:1: measures what line [0-9]+ does' 20 "$x" validate megamoe --data "$dir/many.csv"

# ---- NUL bytes and byte order marks in the other inputs ----
printf 'backend,bytes,gap_s,issue_s,deliver_s,repeat\npipe,4096,0,1e-6,2e-6,0\npipe,8192,0,2e-6,3e-6,0\npipe,16384,0,3e-6,5e-6,0\npipe,32768,0,5e-6,9e-6,0\0\n' >"$dir/s.csv"
expect samples-nul 2 's\.csv:5:25: a NUL byte' 10 "$x" fit "$dir/s.csv"
printf '{"workers":[{"ops":[{"send":100\0}]}]}' >"$dir/nul.json"
expect program-nul 2 'nul\.json:1:32: a NUL byte' 10 "$x" predict --program "$dir/nul.json" --profile h100-nvlink
printf '\357\273\277{"workers":[{"ops":[{"send":100}]}]}' >"$dir/bom.json"
expect program-bom 2 'bom\.json:1:1: a UTF-8 byte order mark' 10 "$x" predict --program "$dir/bom.json" --profile h100-nvlink

echo "$pass of $((pass + fail)) hostile inputs handled"
[ $fail = 0 ]
