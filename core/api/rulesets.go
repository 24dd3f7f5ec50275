package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
)

// RefreshRuleSets implements Backend. The names are checked as the
// profile's are (at most plan.MaxRuleSets, each 1 to 128 bytes); the wait
// is bounded by ruleSetRefreshTimeout.
func (l *Local) RefreshRuleSets(ctx context.Context, names []string) ([]core.RuleSetState, error) {
	if err := checkRuleSetNames(names); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ruleSetRefreshTimeout)
	defer cancel()
	st, err := l.ctrl.RefreshRuleSets(ctx, names...)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		// Still downloading: the states say what came so far; the rest
		// shows in Status.RuleSets when it is done.
		return st, nil
	}
	if err != nil {
		return st, Wrap(err)
	}
	return st, nil
}

// checkRuleSetNames checks the names of a RefreshRuleSets call.
func checkRuleSetNames(names []string) error {
	if len(names) > plan.MaxRuleSets {
		return errorf(CodeBadRequest, fmt.Sprintf("rule sets: at most %d names at once", plan.MaxRuleSets))
	}
	for _, n := range names {
		if n == "" || len(n) > 128 {
			return errorf(CodeBadRequest, "rule sets: a name of 1 to 128 bytes is needed")
		}
	}
	return nil
}

// ruleSetRefreshTimeout bounds how long RefreshRuleSets waits for the
// downloads (each is bounded on its own by the core, at 2 min).
const ruleSetRefreshTimeout = 3 * time.Minute
