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

# a read-only target (mode 0444 in a writable folder) is refused, not
# replaced by the rename, root or not; a folder or a missing folder as
# the output refused before the work (nothing printed, no fit run)
printf 'old\n' >"$dir/ro.json"
chmod 444 "$dir/ro.json"
expect read-only-target 2 'ro\.json: read-only \(mode 444\): not replaced' 20 "$x" fit megamoe --data data/published/megamoe.csv --profile h100-nvlink -o "$dir/ro.json"
[ "$(cat "$dir/ro.json")" = old ] && [ "$(stat -c %a "$dir/ro.json")" = 444 ] ||
    bad read-only-kept "the read-only file was replaced"
expect read-only-svg 2 'ro\.json: read-only' 10 "$x" predict --program $P --profile h100-nvlink --svg "$dir/ro.json"
expect output-dir-first 2 "$dir: is a directory" 10 "$x" fit megamoe --data data/published/megamoe.csv --profile h100-nvlink -o "$dir"
[ -s "$dir/out" ] && bad output-dir-first "the fit ran first: $(head -c 80 "$dir/out")"
expect output-nofolder-first 2 'cannot create: no folder .*/none' 10 "$x" fit megamoe --data data/published/megamoe.csv --profile h100-nvlink -o "$dir/none/t.json"
[ -s "$dir/out" ] && bad output-nofolder-first "the fit ran first: $(head -c 80 "$dir/out")"

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

# plan flashattn: the flags' ranges are the config check's; a grid point
# past it named with its flag before any plan; a dtype no kernel runs
expect fa-cp-range 2 '--cp: expected a whole number from 1 to 4096' 10 "$x" plan flashattn --preset llama3-8b --profile h100-nvlink --cp 5000
expect fa-seq-range 2 '--seq: expected a whole number from 1 to 100000000' 10 "$x" plan flashattn --preset llama3-8b --profile h100-nvlink --seq 200000000
expect fa-seq-grid-flag 2 '--seq-grid: 1.34218e\+08 tokens per rank: seq must be' 10 "$x" plan flashattn --preset llama3-8b --profile h100-nvlink --seq-grid 1:1000000000:x2
printf '{"preset": "llama3-8b", "dtype": "int1"}' >"$dir/fa.json"
expect fa-dtype 2 'fa\.json:1:[0-9]+: dtype: dtype must be bf16, fp16 or fp8' 10 "$x" plan flashattn --config "$dir/fa.json" --profile h100-nvlink

# ---- validate ----
# an EP row's source past 95 bytes with a two-byte character at byte 95:
# kept whole, in --json too
ephdr=$(grep -v '^#' "$src/data/published/ep.csv" | head -1)
eprow=$(grep -v '^#' "$src/data/published/ep.csv" | grep -v '^"' | sed -n 2p)
printf '%s\n%s%s%s\n' "$ephdr" "$(printf '%094d' 0 | tr 0 a)" "$(printf '\303\251')" \
    "tail,${eprow#*,}" >"$dir/epu.csv"
expect ep-source-whole 0 '"source": "a{94}.tail"' 20 "$x" validate ep --data "$dir/epu.csv" --json
# a row's gpu and fabric are built-in names, never paths: a FIFO hung the
# command, /dev/zero was read to 256 MiB, a file's first word was quoted
epbody=$(grep -v '^#' "$src/data/published/ep.csv" | grep -v '^"' | sed -n 2p | cut -d, -f4-)
mkfifo "$dir/fifo"
epcase() { # NAME GPU FABRIC PATTERN
    printf '%s\ns,%s,%s,%s\n' "$ephdr" "$2" "$3" "$epbody" >"$dir/epp.csv"
    expect "$1" 2 "$4" 10 "$x" validate ep --data "$dir/epp.csv"
}
epcase ep-gpu-fifo "$dir/fifo" none 'epp\.csv:2:3: gpu: ".*fifo" is not a built-in GPU profile \(a100-nvlink'
epcase ep-gpu-zero /dev/zero none 'epp\.csv:2:3: gpu: "/dev/zero" is not a built-in GPU profile'
epcase ep-gpu-passwd /etc/passwd none 'gpu: "/etc/passwd" is not a built-in GPU profile \([^:]*\)$'
grep -q root "$dir/err" && bad ep-gpu-passwd-quote "the file's content is in the message"
epcase ep-gpu-relative profiles/h100-nvlink.json none 'gpu: "profiles/h100-nvlink.json" is not a built-in'
epcase ep-gpu-plus h100-nvlink+ib-400 none 'gpu: "h100-nvlink\+ib-400" is not a built-in GPU profile'
epcase ep-fabric-as-gpu ib-400 none 'epp\.csv:2:3: gpu: "ib-400" is a fabric, not a GPU profile'
epcase ep-gpu-as-fabric h100-nvlink h800-nvlink 'epp\.csv:2:[0-9]+: fabric: "h800-nvlink" is a GPU profile, not a fabric \(efa-400, ib-400, roce-200\)'
# (a fabric name fits 23 bytes: a FIFO of a short name)
sf=/tmp/xs$$.f
mkfifo "$sf" && epcase ep-fabric-fifo h100-nvlink "$sf" 'fabric: "/tmp/xs[0-9]+\.f" is not a built-in fabric'
rm -f "$sf"
epcase ep-fabric-zero h100-nvlink /dev/zero 'fabric: "/dev/zero" is not a built-in fabric'
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
printf '%s\ns,ib-400,%s,100\n' "$hdr" "${row#*,}" >"$dir/v.csv"
expect megamoe-fabric-as-gpu 2 'v\.csv:2:3: gpu: "ib-400" is a fabric, not a GPU profile' 10 "$x" validate megamoe --data "$dir/v.csv"
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
# control bytes from data and from arguments, in tables and in messages:
# written as \xNN, never raw (an ESC recolours a terminal, a BEL rings it)
# noesc NAME WANT_RC CMD...: exit WANT_RC, no raw ESC or BEL, an escaped one
noesc() {
    name=$1 want=$2
    shift 2
    run 60 "$@"
    if [ "$rc" = "$want" ] && ! cat "$dir/out" "$dir/err" | grep -q "$(printf '[\033\007]')" &&
        cat "$dir/out" "$dir/err" | grep -q 'x1b'; then
        ok "$name"
    else
        bad "$name" "exit $rc (want $want), raw control characters or none escaped"
    fi
}
printf '%s\n"a\033[31mb\007",%s\n' "$ephdr" "${eprow#*,}" >"$dir/epesc.csv"
noesc ep-summary-escapes 0 "$x" validate ep --data "$dir/epesc.csv"
noesc ep-by-source-escapes 0 "$x" validate ep --data "$dir/epesc.csv" --by-source
noesc ep-models-escapes 0 "$x" validate ep --data "$dir/epesc.csv" --models all
printf '%s\ns,%s\n' "$ephdr" "$(echo "${eprow#*,}" | awk -F, -v OFS=, '{$3="deep\033[31m"; print}')" >"$dir/eplib.csv"
noesc ep-library-message 2 "$x" validate ep --data "$dir/eplib.csv"
printf '%s\ns,%s,100\n' "$hdr" "$(echo "$row" | sed 's/,sequential$/,fused\o033[31m/')" >"$dir/arm.csv"
noesc megamoe-arm-message 2 "$x" validate megamoe --data "$dir/arm.csv"
noesc fit-arm-message 2 "$x" fit megamoe --data "$dir/arm.csv" --profile h100-nvlink
printf '%s\ns,h100\033[31m,%s,100\n' "$hdr" "${row#*,}" >"$dir/gpu.csv"
noesc fit-gpu-message 2 "$x" fit megamoe --data "$dir/gpu.csv" --profile h100-nvlink
noesc fit-profile-argument 2 "$x" fit megamoe --data "$dir/arm.csv" --profile "$(printf 'h100\033[31m')"
printf '%s\ns,%s,100\n' "$hdr" "$row" >"$dir/v.csv"
noesc fit-source-argument 2 "$x" fit megamoe --data "$dir/v.csv" --profile h100-nvlink --source "$(printf 'x\033[31m')"
noesc command-argument 2 "$x" "$(printf 'pl\033an')"
# the published rows copied 300 times: every row measured 300 times
{ grep -v '^#' data/published/megamoe.csv | head -1
  for k in $(seq 300); do grep -v '^#' data/published/megamoe.csv | tail -n +2; done; } >"$dir/many.csv"
expect validate-copies 2 'many\.csv:[0-9]+:1: measures what line [0-9]+ does' 20 "$x" validate megamoe --data "$dir/many.csv"

# fit megamoe: numbers decimal, knobs once each and within the kernel,
# times a model can reach, and a bound on the rows known before any fit
printf '%s\ns,%s,0x10\n' "$hdr" "$row" >"$dir/f.csv"
expect fit-hex-time 2 'f\.csv:2:[0-9]+: time_us: expected microseconds' 10 "$x" fit megamoe --data "$dir/f.csv" --profile h100-nvlink
khdr="$hdr,knobs"
krow=$(echo "$row" | sed 's/,sequential$/,fused-lag/')
printf '%s\ns,%s,100,lag=1;lag=2\n' "$khdr" "$krow" >"$dir/f.csv"
expect fit-knob-twice 2 'f\.csv:2:[0-9]+: knobs: lag is given twice' 10 "$x" fit megamoe --data "$dir/f.csv" --profile h100-nvlink
printf '%s\ns,%s,100,experts_per_wave=4096\n' "$khdr" "$krow" >"$dir/f.csv"
expect fit-experts-per-wave 2 'knobs: experts_per_wave: 4096, more than the 32 experts a rank holds' 10 "$x" fit megamoe --data "$dir/f.csv" --profile h100-nvlink
printf '%s\ns,%s,100,block_n=7\n' "$khdr" "$krow" >"$dir/f.csv"
expect fit-block-n 2 'knobs: block_n: expected a multiple of 16 from 16 to 256' 10 "$x" fit megamoe --data "$dir/f.csv" --profile h100-nvlink
awk -F, -v OFS=, '/^#/ {next} NR > 1 && $14 ~ /^[0-9.]+$/ {$14 = $14 * 1000} {print}' data/published/megamoe.csv >"$dir/x1000.csv"
expect fit-all-pinned 2 'x1000\.csv: every term fitted ended at its bound .*are they microseconds' 60 "$x" fit megamoe --data "$dir/x1000.csv" --profile h100-nvlink
awk -F, -v OFS=, '/^#/ {next} NR > 1 && $14 ~ /^[0-9.]+$/ {$14 = $14 * 3} {print}' data/published/megamoe.csv >"$dir/x3.csv"
run 60 "$x" fit megamoe --data "$dir/x3.csv" --profile h100-nvlink
if [ $rc = 0 ] && grep -q 'warning: .* ended at the bound of x1/4 to x4' "$dir/err"; then
    ok fit-some-pinned
else
    bad fit-some-pinned "exit $rc, no warning: $(head -c 200 "$dir/err")"
fi
{ echo "$hdr"; for k in $(seq 2001); do echo "s,$(echo "$row" | sed "s/,64,sequential/,$k,sequential/"),100"; done; } >"$dir/many.csv"
expect fit-rows-bound 2 'many\.csv:2002:1: more than 2000 rows: the fit predicts each 60 to 120 times' 10 "$x" fit megamoe --data "$dir/many.csv" --profile h100-nvlink
# sweep with --ep-library: a config the grid cannot make is named (it
# exited 2 saying nothing); an unknown library names the flag and the
# kernel it defaulted to
printf '{"presets":["deepseek-v3","glm"],"tokens":[16],"ep":[64]}' >"$dir/g.json"
expect sweep-ep-library-config 2 'glm, 16 tokens, EP 64: experts \(288\) must be a multiple of ep' 30 "$x" sweep megamoe --grid "$dir/g.json" --profile h800-nvlink --fabric efa-400 --ep-library uccl-ep
expect ep-library-default-kernel 2 '--ep-library, --ep-kernel: ep_library "nope" and ep_kernel "normal" \(the default\)' 10 "$x" plan megamoe --preset deepseek-v3 --profile h800-nvlink --ep-library nope
expect fabric-twice 2 '--fabric given twice \("ib-400", "efa-400"\)' 10 "$x" plan megamoe --preset deepseek-v3 --profile h800-nvlink --ep 64 --fabric ib-400 --fabric efa-400
expect sweep-fabric-twice 2 '--fabric given twice' 10 "$x" sweep megamoe --profile h800-nvlink --fabric ib-400 --fabric efa-400
for n in 1e9:1e\\+09 65537:65537; do
    shown=${n#*:} n=${n%%:*}
    sed "s/\"node_gpus\": [0-9][0-9]*/\"node_gpus\": $n/; s/\"name\": \"h800-nvlink\"/\"name\": \"n\"/" profiles/h800-nvlink.json >"$dir/node.json"
    expect "node-gpus-$n" 2 "node\\.json:3:[0-9]+: node_gpus: expected a whole number from 1 to 65536, got $shown\$" 10 "$x" plan megamoe --preset deepseek-v3 --profile "$dir/node.json"
done
# validate ep --by-source over many one-row sources: linear in them (100
# took 47 s, 3,000 did not end), and a bound on the rows known first
{ echo "$ephdr"; for k in $(seq 300); do echo "s$k,${eprow#*,}" | sed "s/,4096,/,$((4000 + k)),/"; done; } >"$dir/eps.csv"
expect ep-by-source-many 0 'with each source left out of the fit: median' 120 "$x" validate ep --data "$dir/eps.csv" --by-source
{ echo "$ephdr"; for k in $(seq 2001); do echo "s$k,${eprow#*,}"; done; } >"$dir/eps.csv"
expect ep-by-source-bound 2 '--by-source: 2001 rows of 2001 sources, more than 2000' 120 "$x" validate ep --data "$dir/eps.csv" --by-source
# CSV lines that end with CR alone, an empty --models, a value no kernel's
# time can be (printed as 300 digits)
printf '%s\rs,%s,100\r' "$hdr" "$row" >"$dir/cr.csv"
expect cr-line-ends 2 'cr\.csv:1:[0-9]+: a carriage return inside a line' 10 "$x" validate megamoe --data "$dir/cr.csv"
expect models-empty 2 '--models: an empty list' 10 "$x" validate ep --models ''
for v in 1e300 1e-300; do
    printf '%s\n%s\n' "$ephdr" "$(echo "$eprow" | awk -F, -v OFS=, -v v=$v '{$16 = v; print}')" >"$dir/epv.csv"
    expect "ep-value-$v" 2 "epv\\.csv:2:[0-9]+: value: $v [A-Za-z_]+ is a time of .* us, outside 0.001 to 1e\\+12 us" 10 "$x" validate ep --data "$dir/epv.csv"
done

# ---- NUL bytes and byte order marks in the other inputs ----
printf 'backend,bytes,gap_s,issue_s,deliver_s,repeat\npipe,4096,0,1e-6,2e-6,0\npipe,8192,0,2e-6,3e-6,0\npipe,16384,0,3e-6,5e-6,0\npipe,32768,0,5e-6,9e-6,0\0\n' >"$dir/s.csv"
expect samples-nul 2 's\.csv:5:25: a NUL byte' 10 "$x" fit "$dir/s.csv"
printf '{"workers":[{"ops":[{"send":100\0}]}]}' >"$dir/nul.json"
expect program-nul 2 'nul\.json:1:32: a NUL byte' 10 "$x" predict --program "$dir/nul.json" --profile h100-nvlink
printf '\357\273\277{"workers":[{"ops":[{"send":100}]}]}' >"$dir/bom.json"
expect program-bom 2 'bom\.json:1:1: a UTF-8 byte order mark' 10 "$x" predict --program "$dir/bom.json" --profile h100-nvlink

echo "$pass of $((pass + fail)) hostile inputs handled"
[ $fail = 0 ]
