//go:build e2e && bench

package bench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times (100 on every Linux
// architecture Go supports).
const clockTicks = 100

// cpuWatch measures, over a span, how busy the whole machine was and how much CPU given
// processes used: what tells a CPU-bound run (every core busy) from one waiting on the disk.
type cpuWatch struct {
	start    time.Time
	busy0    float64
	pids     []int
	proc0    []float64
	procName []string
}

func watchCPU(pids ...int) *cpuWatch {
	w := &cpuWatch{start: time.Now(), busy0: machineBusy(), pids: pids}
	for _, pid := range pids {
		w.proc0 = append(w.proc0, procCPU(pid))
		w.procName = append(w.procName, procName(pid))
	}
	return w
}

// report is "machine X of N cores busy; name Y cores, …" since watchCPU.
func (w *cpuWatch) report() string {
	wall := time.Since(w.start).Seconds()
	parts := []string{fmt.Sprintf("machine %.2f of %d cores busy", (machineBusy()-w.busy0)/wall, runtime.NumCPU())}
	for i, pid := range w.pids {
		parts = append(parts, fmt.Sprintf("%s %.2f", w.procName[i], (procCPU(pid)-w.proc0[i])/wall))
	}
	return strings.Join(parts, "; ")
}

// machineBusy is the seconds all cores spent neither idle nor waiting on I/O since boot.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0]) // cpu user nice system idle iowait irq softirq steal …
	var busy float64
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i != 3 && i != 4 && i < 8 { // not idle, not iowait, not guest time (counted in user)
			busy += n
		}
	}
	return busy / clockTicks
}

// procCPU is a process's user and system seconds (0 when it is gone).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after "pid (comm) ": state is field 3
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

func procName(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return strconv.Itoa(pid)
	}
	return strings.TrimSpace(string(b))
}
