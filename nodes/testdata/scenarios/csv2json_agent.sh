#!/bin/sh
# A stand-in for a CLI coding agent: it reads its task, writes csv2json.sh (CSV with a header
# line on stdin, a JSON array of objects on stdout), tests it, and reports in _result.md.
set -e
task="$1"
grep -q "CSV to JSON" "$task" || { echo "the task does not ask for a CSV to JSON tool" >&2; exit 3; }
cat > csv2json.sh <<'TOOL'
#!/bin/sh
# csv2json.sh: converts CSV (a header line, then rows; no quoted commas) on stdin to a JSON
# array of objects on stdout.
awk -F, '
function esc(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return s }
{ sub(/\r$/, "") }
NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; n = NF; next }
{
	printf "%s{", (rows++ ? ",\n  " : "[\n  ")
	for (i = 1; i <= n; i++) printf "%s\"%s\": \"%s\"", (i > 1 ? ", " : ""), esc(h[i]), esc($i)
	printf "}"
}
END { if (rows) print "\n]"; else print "[]" }'
TOOL
printf 'name,lang\nada,go\n' > _sample.csv
sh csv2json.sh < _sample.csv > _sample.json
grep -q '"name": "ada"' _sample.json || { echo "csv2json.sh failed its test" >&2; cat _sample.json >&2; exit 4; }
echo "csv2json.sh passes its test"
printf 'csv2json.sh converts CSV on stdin to a JSON array of objects; tested on a sample.\n' > _result.tmp
mv _result.tmp _result.md
