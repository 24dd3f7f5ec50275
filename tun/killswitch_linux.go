package tun

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// enableKillSwitch loads nftKillSwitch's table with nft, after recording
// the command that deletes it.
func enableKillSwitch(k *KillSwitch, st *stateFile) error {
	script, err := nftKillSwitch(k)
	if err != nil {
		return err
	}
	del := slices.Clone(nftKillSwitchUndo)
	if !hasUndo(st, del) {
		if err := st.record(Change{Kind: "nft", Undo: del}); err != nil {
			return err
		}
	}
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		if _, lerr := exec.LookPath("nft"); lerr != nil {
			return fmt.Errorf("needs nft (the nftables package): %w", lerr)
		}
		return fmt.Errorf("nft -f: %w: %s", err, strings.TrimSpace(string(out)))
	}
	k.Logger.Debug("tun: kill switch table loaded", "rules", script)
	return nil
}

func hasUndo(st *stateFile, argv []string) bool {
	for _, c := range st.State.Changes {
		if strings.Join(c.Undo, "\x00") == strings.Join(argv, "\x00") {
			return true
		}
	}
	return false
}

// undoNft runs a recorded nft command; a table that is gone already (after
// a reboot, or removed by hand) counts as undone.
func undoNft(argv []string) error {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "No such file or directory") {
			return nil
		}
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
