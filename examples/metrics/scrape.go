package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// scrape is one read of /metrics: each series ("name{labels}") with its
// value.
type scrape map[string]float64

// get scrapes url (Prometheus text format).
func get(ctx context.Context, url string) (scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	s := scrape{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("GET %s: bad line %q", url, line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("GET %s: bad value in %q", url, line)
		}
		s[line[:i]] = v
	}
	return s, sc.Err()
}

// sum adds the values of the series called name whose labels include
// every one of labels (`key="value"` each), and reports whether there
// was one.
func (s scrape) sum(name string, labels ...string) (float64, bool) {
	total, found := 0.0, false
	for series, v := range s {
		n, ls, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(","+strings.TrimSuffix(ls, "}")+",", ","+l+",") {
				ok = false
				break
			}
		}
		if ok {
			total += v
			found = true
		}
	}
	return total, found
}

// verify checks the series a round must have produced, and, from the
// second round on, that their counts moved since the previous scrape.
func verify(check func(bool, string, ...any), s, prev scrape, o *options, round int) {
	const dur = "db_client_operation_duration_seconds_count"
	sys := `db_system_name="zookeeper"`
	gets, _ := s.sum(dur, sys, `db_operation_name="get"`)
	sets, _ := s.sum(dur, sys, `db_operation_name="set"`)
	want := float64(o.clients * o.incs * round)
	check(gets >= want && sets >= want, "%s: %.0f gets and %.0f sets (at least %.0f each: one of each per increment)", dur, gets, sets, want)
	conflicts, _ := s.sum(dur, sys, `db_operation_name="set"`, `error_type="bad_version"`, `db_response_status_code="-103"`)
	check(conflicts >= float64(o.clients*round), "%s{set, error_type=bad_version}: %.0f", dur, conflicts)
	missing, _ := s.sum(dur, sys, `db_operation_name="exists"`, `error_type="no_node"`, `db_response_status_code="-101"`)
	check(missing == float64(o.clients*round), "%s{exists, error_type=no_node, db_response_status_code=-101}: %.0f", dur, missing)
	connected, ok := s.sum("zookeeper_session_state", `zookeeper_session_state="connected"`)
	check(ok && connected == float64(o.clients), "zookeeper_session_state{connected}: %.0f sessions", connected)
	flows, _ := s.sum("zkflow_flow_duration_seconds_count")
	check(flows >= want, "zkflow_flow_duration_seconds_count: %.0f flows", flows)
	retries, _ := s.sum("zkflow_retries_total", `error_type="bad_version"`)
	check(retries >= float64(o.clients*round), "zkflow_retries_total{error_type=bad_version}: %.0f (at least one per client and round)", retries)
	established, _ := s.sum("zookeeper_connection_events_total", `zookeeper_connection_event="established"`)
	check(established >= float64(o.clients), "zookeeper_connection_events_total{established}: %.0f", established)
	if prev == nil {
		return
	}
	pgets, _ := prev.sum(dur, sys, `db_operation_name="get"`)
	pflows, _ := prev.sum("zkflow_flow_duration_seconds_count")
	pretries, _ := prev.sum("zkflow_retries_total", `error_type="bad_version"`)
	check(retries > pretries, "retries moved: %.0f -> %.0f", pretries, retries)
	check(gets > pgets && flows > pflows, "counts moved since round %d: gets %.0f -> %.0f, flows %.0f -> %.0f", round-1, pgets, gets, pflows, flows)
	if o.srv == nil {
		return
	}
	expired, _ := s.sum("zookeeper_session_transitions_total", `zookeeper_session_state="expired"`)
	check(expired == 1, "zookeeper_session_transitions_total{expired}: %.0f (one session expired)", expired)
	susp, _ := s.sum("zookeeper_session_suspended_duration_seconds_count")
	check(susp >= 3, "zookeeper_session_suspended_duration_seconds_count: %.0f (two drops and the expiry)", susp)
}
