#!/bin/sh
# Stands in for the claude CLI: prints a stream-json session that writes csv2json.sh in its
# working directory (the node's scratch folder) and ends with a result.
cat <<'JSON'
{"type":"system","subtype":"init","cwd":".","session_id":"sess-squad","tools":["Bash","Write"],"model":"claude-sonnet-4-5","permissionMode":"bypassPermissions"}
JSON
cat > csv2json.sh <<'PROG'
#!/bin/sh
awk -F, 'NR==1{for(i=1;i<=NF;i++)h[i]=$i;next}{printf "{";for(i=1;i<=NF;i++){printf "%s\"%s\":\"%s\"",(i>1?",":""),h[i],$i};print "}"}'
PROG
cat <<'JSON'
{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{"file_path":"csv2json.sh"}}],"usage":{"input_tokens":50,"output_tokens":20}},"session_id":"sess-squad"}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"File created"}]},"session_id":"sess-squad"}
{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"csv2json.sh converts CSV on stdin to JSON lines.","session_id":"sess-squad","total_cost_usd":0.0042,"usage":{"input_tokens":120,"output_tokens":40},"permission_denials":[]}
JSON
