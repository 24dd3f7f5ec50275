package tun

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// strictDarwin turns on strict route: it loads pfStrictRules into pfAnchor
// and takes a reference on pf's enable count. Both are changes pf keeps
// after Skiff dies, so each is recorded with the command that undoes it:
// flushing the anchor, and releasing the reference with its token (pf
// stops only when no one else, such as Apple's Internet Sharing, holds
// one). The token is known only once pf hands it out, so it is recorded
// right after `pfctl -E`; a crash in between leaves pf enabled with the
// anchor already flushed by cleanup, and pf passes everything by default.
func (t *Tunnel) strictDarwin() error {
	out, err := exec.Command("pfctl", "-s", "rules").Output()
	if err != nil {
		return fmt.Errorf("tun: strict route: read pf's main ruleset: %w", err)
	}
	if !pfMainEvaluates(string(out), pfAnchor) {
		return fmt.Errorf(`tun: strict route: pf's main ruleset does not evaluate anchor "com.apple/*" as the default /etc/pf.conf does: restore it (pfctl -f /etc/pf.conf) or turn strict route off`)
	}

	rules, err := pfStrictRules(&t.cfg, t.name, os.Geteuid())
	if err != nil {
		return fmt.Errorf("tun: strict route: %w", err)
	}
	if err := pfLoadAnchor(t.state, pfAnchor, rules, true); err != nil {
		return fmt.Errorf("tun: strict route: %w", err)
	}
	t.log.Debug("tun: pf anchor loaded", "anchor", pfAnchor, "rules", rules)
	token, err := pfEnable(t.state)
	if err != nil {
		return fmt.Errorf("tun: strict route: %w", err)
	}
	t.log.Debug("tun: pf enabled", "token", token)
	return nil
}

// pfLoadAnchor loads rules into anchor; when fresh, it first records in st
// the flush that undoes it (a replacement finds it recorded).
func pfLoadAnchor(st *stateFile, anchor, rules string, fresh bool) error {
	if fresh {
		if err := st.record(Change{Kind: "command", Undo: []string{"pfctl", "-a", anchor, "-F", "all"}}); err != nil {
			return err
		}
	}
	if _, err := pfctl(rules, "-a", anchor, "-f", "-"); err != nil {
		return fmt.Errorf("load the pf anchor: %w", err)
	}
	return nil
}

// pfEnable takes a reference on pf's enable count and records in st its
// release with the token pf hands out, which it returns.
func pfEnable(st *stateFile) (string, error) {
	out, err := pfctl("", "-E")
	if err != nil {
		return "", fmt.Errorf("enable pf: %w", err)
	}
	token, err := parsePFToken(string(out))
	if err != nil {
		return "", fmt.Errorf("enable pf: %w", err)
	}
	return token, st.record(Change{Kind: "command", Undo: []string{"pfctl", "-X", token}})
}

// pfctl runs pfctl with args and stdin, and returns what it printed on
// both outputs (it reports on stderr, the token among it).
func pfctl(stdin string, args ...string) ([]byte, error) {
	cmd := exec.Command("pfctl", args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("pfctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.Bytes(), nil
}
