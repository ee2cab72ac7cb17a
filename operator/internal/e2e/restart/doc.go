// Package restart proves on the local cluster that the operator's membership changes are
// crash-safe: the real operator binary is SIGKILLed after every step it takes during a
// scale-up, restarted, and must converge without a duplicate or orphaned learner.
package restart
