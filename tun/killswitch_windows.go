package tun

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	procFwpmFilterDeleteByKey0   = modfwpuclnt.NewProc("FwpmFilterDeleteByKey0")
	procFwpmSubLayerDeleteByKey0 = modfwpuclnt.NewProc("FwpmSubLayerDeleteByKey0")
)

// Errors of a delete whose object is gone already (fwpmu.h).
const (
	fwpEFilterNotFound   = windows.Errno(0x80320003) // FWP_E_FILTER_NOT_FOUND
	fwpESublayerNotFound = windows.Errno(0x80320007) // FWP_E_SUBLAYER_NOT_FOUND
)

// enableKillSwitch adds planWFPKillSwitch's filters, persistent, in a
// persistent sublayer of their own. The keys are chosen here and recorded
// first ("wfp" change: sublayer key, then filter keys); one transaction
// deletes the kill switch recorded before, if any, and adds the new one,
// so that a replacement leaves no moment unfiltered.
func enableKillSwitch(k *KillSwitch, st *stateFile) error {
	rules := planWFPKillSwitch(k)
	keys := make([]windows.GUID, len(rules)+1)
	for i := range keys {
		g, err := windows.GenerateGUID()
		if err != nil {
			return fmt.Errorf("filter key: %w", err)
		}
		keys[i] = g
	}
	undo := []string{"wfp"}
	for _, g := range keys {
		undo = append(undo, g.String())
	}
	old := st.State.Changes
	if err := st.record(Change{Kind: "wfp", Undo: undo}); err != nil {
		return err
	}
	engine, err := openWFPEngine()
	if err != nil {
		return err
	}
	defer fwpmCall(procFwpmEngineClose0, uintptr(engine))
	err = wfpTransaction(engine, func() error {
		for _, c := range old {
			if err := deleteWFP(engine, c.Undo); err != nil {
				return err
			}
		}
		return addKillSwitchFilters(engine, rules, keys)
	})
	if err != nil {
		return err
	}
	// The old kill switch is gone: only the new one is left to undo.
	st.State.Changes = st.State.Changes[len(old):]
	return st.save()
}

func openWFPEngine() (windows.Handle, error) {
	var session fwpmSession0 // not dynamic: what it adds outlives it
	var engine windows.Handle
	if err := fwpmCall(procFwpmEngineOpen0, 0, rpcCAuthnWinNT, 0, uintptr(unsafe.Pointer(&session)), uintptr(unsafe.Pointer(&engine))); err != nil {
		if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
			return 0, fmt.Errorf("open the filtering engine: %w", ErrPermission)
		}
		return 0, fmt.Errorf("open the filtering engine: %w", err)
	}
	return engine, nil
}

// wfpTransaction runs fn in a transaction of engine: all of it or none.
func wfpTransaction(engine windows.Handle, fn func() error) error {
	if err := fwpmCall(procFwpmTransactionBegin0, uintptr(engine), 0); err != nil {
		return fmt.Errorf("begin a transaction: %w", err)
	}
	if err := fn(); err != nil {
		fwpmCall(procFwpmTransactionAbort0, uintptr(engine))
		return err
	}
	if err := fwpmCall(procFwpmTransactionCommit0, uintptr(engine)); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// addKillSwitchFilters adds the sublayer keys[0] and the filters, keys[1:].
func addKillSwitchFilters(engine windows.Handle, rules []wfpRule, keys []windows.GUID) error {
	name, err := windows.UTF16PtrFromString("Skiff kill switch")
	if err != nil {
		return err
	}
	sublayer := fwpmSublayer0{
		subLayerKey: wfpGUID(keys[0]),
		displayData: fwpmDisplayData0{name: name},
		flags:       fwpmSublayerFlagPersistent,
		weight:      math.MaxUint16 - 1, // just below strict route's
	}
	if err := fwpmCall(procFwpmSubLayerAdd0, uintptr(engine), uintptr(unsafe.Pointer(&sublayer)), 0); err != nil {
		return fmt.Errorf("add the sublayer: %w", err)
	}
	appID, free, err := wfpAppID()
	if err != nil {
		return err
	}
	defer free()
	return addWFPFilters(engine, &sublayer, name, rules, 0, appID, keys[1:])
}

// deleteWFP deletes what a "wfp" change recorded (argv: "wfp", the
// sublayer's key, the filters' keys): the filters, then the sublayer.
// What is gone already counts as deleted.
func deleteWFP(engine windows.Handle, argv []string) error {
	if len(argv) < 2 || argv[0] != "wfp" {
		return fmt.Errorf("not a WFP record: %q", argv)
	}
	keys := make([]windows.GUID, 0, len(argv)-1)
	for _, s := range argv[1:] {
		g, err := windows.GUIDFromString(s)
		if err != nil {
			return fmt.Errorf("WFP record: %w", err)
		}
		keys = append(keys, g)
	}
	for _, g := range keys[1:] {
		if err := fwpmCall(procFwpmFilterDeleteByKey0, uintptr(engine), uintptr(unsafe.Pointer(&g))); err != nil && !errors.Is(err, fwpEFilterNotFound) {
			return fmt.Errorf("delete filter %s: %w", g, err)
		}
	}
	if err := fwpmCall(procFwpmSubLayerDeleteByKey0, uintptr(engine), uintptr(unsafe.Pointer(&keys[0]))); err != nil && !errors.Is(err, fwpESublayerNotFound) {
		return fmt.Errorf("delete sublayer %s: %w", keys[0], err)
	}
	return nil
}

// undoWFP removes a recorded kill switch.
func undoWFP(argv []string) error {
	engine, err := openWFPEngine()
	if err != nil {
		return err
	}
	defer fwpmCall(procFwpmEngineClose0, uintptr(engine))
	return wfpTransaction(engine, func() error { return deleteWFP(engine, argv) })
}
