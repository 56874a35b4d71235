// Command simsum sums the large simulation run for make sim: it reads the
// verbose output of go test on stdin, passes it through (without the
// === RUN / --- PASS noise), and at the end prints the seeds run (the
// ranges, where the drawn range came from, and the regression seeds
// replayed per scenario), the seeds per second of each scenario and
// overall, the seeds per CPU second of each scenario (when the lines say
// the CPU time), the safety and liveness failures, the faults fired per class
// the seeds run with their clients under a root and those run with the
// executors' sync after a reconnect, and the determinism pairs compared.
// It exits non-zero if a seed failed, a determinism pair differed, a
// fault class never fired, no seed ran under a root or with the sync
// (when the lines say how many did), fewer than -min seeds ran, or go
// test reported a failure.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	simLine   = regexp.MustCompile(`SIM scenario=(\S+) seeds=(\d+) wall_ms=(\d+) safety=(\d+) liveness=(\d+) setup=(\d+) fired=(\S+)(?: regressions=(\S+))?(?: ranges=(\S+))?(?: rooted=(\d+))?(?: cpu_ms=(\d+))?(?: synced=(\d+))?`)
	rangeLine = regexp.MustCompile(`SIMRANGE fixed=(\S+) drawn=(\S+) source="([^"]*)"`)
	detLine   = regexp.MustCompile(`determinism: (.+): (\d+) pairs compared, (\d+) mismatches`)
	noise     = regexp.MustCompile(`^\s*(=== (RUN|PAUSE|CONT)|--- (PASS|SKIP))`)
	failLine  = regexp.MustCompile(`^(--- FAIL|FAIL|panic:)`)
)

func main() {
	minSeeds := flag.Int("min", 0, "fail if fewer seeds ran in all")
	flag.Parse()
	os.Exit(run(os.Stdin, os.Stdout, *minSeeds))
}

// run reads go test's output from in, writes the pass-through and the
// summary to out, and returns the exit code.
func run(in io.Reader, out io.Writer, minSeeds int) int {
	start := time.Now()
	var (
		seeds, safety, liveness, setup int
		wallMS, cpuMS                  int64
		scenarios                      []string
		fired                          = map[string]int{}
		classes                        []string
		pairs, mismatches              int
		rooted, synced                 int
		sawRooted, sawSynced           bool
		failed                         bool
		speeds, cpuSpeeds, replayed    []string
		ranges                         = map[string]bool{}
		rangeList                      []string
	)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if noise.MatchString(line) {
			continue
		}
		fmt.Fprintln(out, line)
		if failLine.MatchString(line) {
			failed = true
		}
		if m := simLine.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[2])
			w, _ := strconv.ParseInt(m[3], 10, 64)
			s, _ := strconv.Atoi(m[4])
			l, _ := strconv.Atoi(m[5])
			u, _ := strconv.Atoi(m[6])
			seeds, wallMS, safety, liveness, setup = seeds+n, wallMS+w, safety+s, liveness+l, setup+u
			scenarios = append(scenarios, fmt.Sprintf("%s=%d", m[1], n))
			speed := 0.0
			if w > 0 {
				speed = float64(n) / (float64(w) / 1000)
			}
			if m[11] != "" {
				c, _ := strconv.ParseInt(m[11], 10, 64)
				cpuMS += c
				if c > 0 {
					cpuSpeeds = append(cpuSpeeds, fmt.Sprintf("%s=%.1f", m[1], float64(n)/(float64(c)/1000)))
				}
			}
			speeds = append(speeds, fmt.Sprintf("%s=%.1f", m[1], speed))
			if m[10] != "" {
				r, _ := strconv.Atoi(m[10])
				rooted, sawRooted = rooted+r, true
			}
			if m[12] != "" {
				r, _ := strconv.Atoi(m[12])
				synced, sawSynced = synced+r, true
			}
			if m[8] != "" && m[8] != "-" {
				replayed = append(replayed, m[1]+"="+m[8])
			}
			for _, kv := range strings.Split(m[7], ",") {
				k, v, _ := strings.Cut(kv, ":")
				c, _ := strconv.Atoi(v)
				if _, ok := fired[k]; !ok {
					classes = append(classes, k)
				}
				fired[k] += c
			}
		}
		if m := rangeLine.FindStringSubmatch(line); m != nil {
			r := fmt.Sprintf("fixed %s, drawn %s (%s)", m[1], m[2], m[3])
			if !ranges[r] {
				ranges[r] = true
				rangeList = append(rangeList, r)
			}
		}
		if m := detLine.FindStringSubmatch(line); m != nil {
			p, _ := strconv.Atoi(m[2])
			x, _ := strconv.Atoi(m[3])
			pairs, mismatches = pairs+p, mismatches+x
		}
	}
	elapsed := time.Since(start)
	fmt.Fprintln(out)
	fmt.Fprintf(out, "sim total: %d seeds over %d scenarios (%s)\n", seeds, len(scenarios), strings.Join(scenarios, " "))
	perCore := 0.0
	if wallMS > 0 {
		perCore = float64(seeds) / (float64(wallMS) / 1000)
	}
	fmt.Fprintf(out, "sim speed: %.1f seeds/s per scenario run (sum of the scenarios' own times, %.1fs); %.1f seeds/s overall (%.1fs elapsed, compilation and parallel packages included)\n",
		perCore, float64(wallMS)/1000, float64(seeds)/elapsed.Seconds(), elapsed.Seconds())
	fmt.Fprintf(out, "sim seeds/s per scenario: %s\n", strings.Join(speeds, " "))
	if cpuMS > 0 {
		fmt.Fprintf(out, "sim seeds per CPU second per scenario (%.1fs of CPU in all; garbage collection included): %s\n",
			float64(cpuMS)/1000, strings.Join(cpuSpeeds, " "))
	}
	fmt.Fprintf(out, "sim ranges: %s\n", strings.Join(rangeList, "; "))
	if len(replayed) == 0 {
		replayed = []string{"none"}
	}
	fmt.Fprintf(out, "sim regression seeds replayed: %s\n", strings.Join(replayed, " "))
	if sawRooted {
		fmt.Fprintf(out, "sim seeds under a root: %d (every client chrooted)\n", rooted)
	}
	if sawSynced {
		fmt.Fprintf(out, "sim seeds with the executors' sync after a reconnect: %d (in memory; the wire scenarios' executors always send it)\n", synced)
	}
	fmt.Fprintf(out, "sim failures: %d safety violations, %d liveness failures, %d setup failures\n", safety, liveness, setup)
	slices.Sort(classes)
	parts := make([]string, 0, len(classes))
	var never []string
	for _, c := range classes {
		parts = append(parts, fmt.Sprintf("%s=%d", c, fired[c]))
		if fired[c] == 0 {
			never = append(never, c)
		}
	}
	fmt.Fprintf(out, "sim faults fired: %s\n", strings.Join(parts, " "))
	fmt.Fprintf(out, "sim determinism: %d pairs compared, %d mismatches\n", pairs, mismatches)
	noRoot := sawRooted && rooted == 0
	noSync := sawSynced && synced == 0
	bad := failed || safety+liveness+setup > 0 || mismatches > 0 || seeds < minSeeds || len(never) > 0 || pairs == 0 || noRoot || noSync
	if noRoot {
		fmt.Fprintln(out, "sim: no seed ran under a root")
	}
	if noSync {
		fmt.Fprintln(out, "sim: no seed ran with the executors' sync after a reconnect")
	}
	if len(never) > 0 {
		fmt.Fprintf(out, "sim: fault classes that never fired: %v\n", never)
	}
	if seeds < minSeeds {
		fmt.Fprintf(out, "sim: %d seeds, fewer than %d\n", seeds, minSeeds)
	}
	if bad {
		fmt.Fprintln(out, "sim: FAIL")
		return 1
	}
	fmt.Fprintln(out, "sim: ok")
	return 0
}
