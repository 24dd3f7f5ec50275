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
	if err := t.state.record(Change{Kind: "command", Undo: []string{"pfctl", "-a", pfAnchor, "-F", "all"}}); err != nil {
		return err
	}
	if _, err := pfctl(rules, "-a", pfAnchor, "-f", "-"); err != nil {
		return fmt.Errorf("tun: strict route: load the pf anchor: %w", err)
	}
	t.log.Debug("tun: pf anchor loaded", "anchor", pfAnchor, "rules", rules)

	out, err = pfctl("", "-E")
	if err != nil {
		return fmt.Errorf("tun: strict route: enable pf: %w", err)
	}
	token, err := parsePFToken(string(out))
	if err != nil {
		return fmt.Errorf("tun: strict route: enable pf: %w", err)
	}
	if err := t.state.record(Change{Kind: "command", Undo: []string{"pfctl", "-X", token}}); err != nil {
		return err
	}
	t.log.Debug("tun: pf enabled", "token", token)
	return nil
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
