package claudecode_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/claudecode"
	"github.com/agiraph/agiraph/runtime/runtimetest"
)

func TestConformance(t *testing.T) { runtimetest.Run(t, behaviors{}) }

// behaviors are runtimes over fake CLIs: shell scripts that do their part in their working
// directory, through the file protocol, between the stream's init and result lines.
type behaviors struct{}

func (behaviors) Prepare(*testing.T, *runtime.Assignment) {}

func (behaviors) Publishes(t *testing.T, file, content, summary string) runtime.Runtime {
	return fakeRuntime(t, echo(initLine)+
		fmt.Sprintf("printf '%%s' %s > %s\n", quote(content), quote(file))+
		echo(successLine(t, summary)))
}

func (behaviors) Checkpoints(t *testing.T, file, content, summary string) runtime.Runtime {
	return fakeRuntime(t, echo(initLine)+
		fmt.Sprintf("printf '%%s' %s > %s\n", quote(content), quote(file))+
		fmt.Sprintf("printf '%%s\\n' %s > %s\n", quote(summary), claudecode.CheckpointFile)+
		echo(successLine(t, "The stage is done.")))
}

func (behaviors) SendsThenPublishes(t *testing.T, to, body, summary string) runtime.Runtime {
	return fakeRuntime(t, echo(initLine)+
		fmt.Sprintf("printf 'TO: %%s\\n%%s\\n---\\n' %s %s >> %s\n", quote(to), quote(body), claudecode.OutboxFile)+
		echo(successLine(t, summary)))
}

func (behaviors) Hangs(t *testing.T) runtime.Runtime {
	return fakeRuntime(t, echo(initLine)+"sleep 600 &\nwait\n")
}

// fakeRuntime returns a runtime whose CLI is a script of body, bridging files quickly.
func fakeRuntime(t *testing.T, body string) runtime.Runtime {
	return claudecode.New(claudecode.WithBinary(fakeCLI(t, body)), claudecode.WithBridgeInterval(20*time.Millisecond))
}

// successLine returns the result line of a successful run whose result text is summary.
func successLine(t *testing.T, summary string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"type": "result", "subtype": "success", "is_error": false, "num_turns": 1, "result": summary,
		"session_id": "sess-1", "total_cost_usd": 0.001, "usage": map[string]int{"input_tokens": 10, "output_tokens": 5},
		"permission_denials": []any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// quote quotes s for the shell.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
