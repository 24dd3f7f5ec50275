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
	fresh := len(st.State.Changes) == 0
	if err := pfLoadAnchor(st, pfKillSwitchAnchor, rules, fresh); err != nil {
		return err
	}
	if !fresh {
		return nil // the reference on pf is recorded already
	}
	_, err = pfEnable(st)
	return err
}

func undoWFP([]string) error { return fmt.Errorf("no WFP on macOS") }
