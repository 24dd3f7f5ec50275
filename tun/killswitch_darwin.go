package tun

import (
	"fmt"
	"os/exec"
)

// enableKillSwitch loads pfKillSwitchRules into pfKillSwitchAnchor and takes
// a reference on pf's enable count, recording how to undo both (as
// strictDarwin does for strict route). A replacement reuses the anchor and
// the reference already recorded.
func enableKillSwitch(k *KillSwitch, st *stateFile) error {
	rules, err := pfKillSwitchRules(k)
	if err != nil {
		return err
	}
	out, err := exec.Command("pfctl", "-s", "rules").Output()
	if err != nil {
		return fmt.Errorf("read pf's main ruleset: %w", err)
	}
	if !pfMainEvaluates(string(out), pfKillSwitchAnchor) {
		return fmt.Errorf(`pf's main ruleset does not evaluate anchor "com.apple/*" as the default /etc/pf.conf does: restore it (pfctl -f /etc/pf.conf)`)
	}
	flush := []string{"pfctl", "-a", pfKillSwitchAnchor, "-F", "all"}
	fresh := len(st.State.Changes) == 0
	if fresh {
		if err := st.record(Change{Kind: "command", Undo: flush}); err != nil {
			return err
		}
	}
	if _, err := pfctl(rules, "-a", pfKillSwitchAnchor, "-f", "-"); err != nil {
		return fmt.Errorf("load the pf anchor: %w", err)
	}
	if !fresh {
		return nil
	}
	out, err = pfctl("", "-E")
	if err != nil {
		return fmt.Errorf("enable pf: %w", err)
	}
	token, err := parsePFToken(string(out))
	if err != nil {
		return fmt.Errorf("enable pf: %w", err)
	}
	return st.record(Change{Kind: "command", Undo: []string{"pfctl", "-X", token}})
}

func undoWFP([]string) error { return fmt.Errorf("no WFP on macOS") }
