package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/skiffvpn/skiff/core"
)

func init() {
	commands["rules"] = command{"list the running rule sets; rules refresh [NAME…] downloads them now through the service", runRules}
}

// runRules implements `skiff rules` (the running rule sets' states) and
// `skiff rules refresh [NAME…]` (download them now, wait for the outcome).
func runRules(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("rules", stderr, "usage: skiff rules [flags] [refresh [NAME …]]")
	client := clientFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	rest := fs.Args()
	refresh := len(rest) > 0 && rest[0] == "refresh"
	if len(rest) > 0 && !refresh {
		fmt.Fprintf(stderr, "skiff rules: unknown subcommand %q (want refresh)\n", rest[0])
		return 2
	}
	// A refresh waits for the downloads, which the service bounds at 3 min.
	ctx, c, done := callService(client, 4*time.Minute)
	defer done()
	var states []core.RuleSetState
	if refresh {
		var err error
		if states, err = c.RefreshRuleSets(ctx, rest[1:]); err != nil {
			return failed(stderr, "rules", err)
		}
	} else {
		st, err := c.Status(ctx)
		if err != nil {
			return failed(stderr, "rules", err)
		}
		states = st.RuleSets
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(states)
		return 0
	}
	if len(states) == 0 {
		fmt.Fprintln(stdout, "no rule sets in use (connect with routes that use rule sets)")
		return 0
	}
	rows := [][]string{{"NAME", "DOMAINS", "RANGES", "FROM", "UPDATED", "ERROR"}}
	failedAny := false
	for _, s := range states {
		updated := "never"
		if !s.Updated.IsZero() {
			updated = s.Updated.Local().Format(time.DateTime)
		}
		if s.Err != "" {
			failedAny = true
		}
		rows = append(rows, []string{s.Name, fmt.Sprint(s.Stats.Domains), fmt.Sprint(s.Stats.Ranges), s.Source, updated, s.Err})
	}
	writeTable(stdout, rows)
	if refresh && failedAny {
		return 1 // a download failed: the lists it had stay in use
	}
	return 0
}
