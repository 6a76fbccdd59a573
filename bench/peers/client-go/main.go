// Command client-go-bench runs the peer benchmark scenarios of kclient's `cargo xtask bench`
// with client-go, and prints each result as one JSON object on stdout.
//
//	client-go-bench sync      --kubeconfig K [--namespace NS] [--kind pods|configmaps] --count N --mode list|stream --managed-fields keep|strip [--lookups L]
//	client-go-bench watch     --kubeconfig K --namespace NS --count N
//	client-go-bench workqueue --shape queue|contended --iterations I [--repeat R]
//	client-go-bench decode    --kubeconfig K [--namespace NS] --count N [--repeat R]
//
// The same scenarios, the same arguments and the same JSON fields as the kclient and kube-rs
// programs (crates/kclient-bench, bench/peers/kube-rs). --content-type json makes the clientset
// ask for JSON only; by default it asks for protobuf first, as client-go's generated clients do.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

// writtenAt is the annotation the writer sets to the time of each update (Unix nanoseconds).
const writtenAt = "bench.kclient.io/written-at"

type options struct {
	kubeconfig, namespace, mode, managedFields, shape, contentType, kind string
	count, lookups, repeat, iterations, settle                           int
}

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: client-go-bench sync|watch|workqueue|decode [options]"))
	}
	scenario := os.Args[1]
	var o options
	fs := flag.NewFlagSet(scenario, flag.ExitOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file")
	fs.StringVar(&o.namespace, "namespace", "", "namespace (empty: all)")
	fs.StringVar(&o.mode, "mode", "list", "initial sync by paged list or streaming list: list|stream")
	fs.StringVar(&o.managedFields, "managed-fields", "strip", "keep|strip")
	fs.StringVar(&o.shape, "shape", "queue", "workqueue shape: queue|contended")
	fs.StringVar(&o.kind, "kind", "pods", "what the sync scenario caches: pods|configmaps")
	fs.StringVar(&o.contentType, "content-type", "", "json: ask for JSON only")
	fs.IntVar(&o.count, "count", 0, "objects (sync, decode) or updates (watch)")
	fs.IntVar(&o.lookups, "lookups", 0, "by-index lookups after the sync")
	fs.IntVar(&o.settle, "settle", 0, "seconds after the sync before reading the resident set again (0: not read)")
	fs.IntVar(&o.repeat, "repeat", 3, "repetitions inside the process")
	fs.IntVar(&o.iterations, "iterations", 10000, "workqueue iterations")
	if err := fs.Parse(os.Args[2:]); err != nil {
		fail(err)
	}
	// The streaming list is client-go's WatchListClient gate (on by default since 1.35).
	os.Setenv("KUBE_FEATURE_WatchListClient", strconv.FormatBool(o.mode == "stream"))

	var res map[string]any
	var err error
	switch scenario {
	case "sync":
		res, err = syncScenario(o)
	case "watch":
		res, err = watchScenario(o)
	case "workqueue":
		res, err = workqueueScenario(o)
	case "decode":
		res, err = decodeScenario(o)
	default:
		err = fmt.Errorf("unknown scenario %q", scenario)
	}
	if err != nil {
		fail(err)
	}
	res["client"] = "client-go"
	res["scenario"] = scenario
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "client-go-bench:", err)
	os.Exit(1)
}

func clientset(o options) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, err
	}
	// No client-side rate limit (the default 5 QPS would pace the paged lists), as the
	// other two clients in the comparison.
	cfg.QPS = -1
	if o.contentType == "json" {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	}
	return kubernetes.NewForConfig(cfg)
}

// statusBytes reads a field of /proc/self/status (VmRSS:, VmHWM:) in bytes.
func statusBytes(field string) int64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func resetPeak() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// waitSynced polls every millisecond (cache.WaitForCacheSync polls every 100 ms, which would
// round the measured time up).
func waitSynced(synced func() bool) {
	for !synced() {
		time.Sleep(time.Millisecond)
	}
}

func syncScenario(o options) (map[string]any, error) {
	cs, err := clientset(o)
	if err != nil {
		return nil, err
	}
	opts := []informers.SharedInformerOption{}
	if o.namespace != "" {
		opts = append(opts, informers.WithNamespace(o.namespace))
	}
	if o.managedFields == "strip" {
		opts = append(opts, informers.WithTransform(stripManagedFields))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, opts...)
	var informer cache.SharedIndexInformer
	switch o.kind {
	case "pods":
		informer = factory.Core().V1().Pods().Informer()
	case "configmaps":
		informer = factory.Core().V1().ConfigMaps().Informer()
	default:
		return nil, fmt.Errorf("unknown kind %q", o.kind)
	}
	if o.lookups > 0 {
		err := informer.AddIndexers(cache.Indexers{"by-node": func(obj any) ([]string, error) {
			return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
		}})
		if err != nil {
			return nil, err
		}
	}
	runtime.GC()
	before := statusBytes("VmRSS:")
	resetPeak()
	cpu0, start := cpuTime(), time.Now()
	stop := make(chan struct{})
	factory.Start(stop)
	waitSynced(informer.HasSynced)
	wall, cpu := time.Since(start), cpuTime()-cpu0
	peak, after := statusBytes("VmHWM:"), statusBytes("VmRSS:")
	objects := len(informer.GetStore().ListKeys())
	res := map[string]any{
		"objects": objects, "mode": o.mode, "managed_fields": o.managedFields, "kind": o.kind,
		"wall_s": wall.Seconds(), "cpu_s": cpu.Seconds(),
		"rss_before": before, "rss_after": after, "rss_peak": peak,
	}
	if o.settle > 0 {
		// What the process holds once garbage is collected and the runtime has had time
		// to return freed memory.
		runtime.GC()
		time.Sleep(time.Duration(o.settle) * time.Second)
		res["rss_settled"] = statusBytes("VmRSS:")
		res["settle_s"] = o.settle
	}
	if o.lookups > 0 {
		indexer := informer.GetIndexer()
		nodes := make([]string, 1000)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("node-%d", i)
		}
		found := 0
		start := time.Now()
		for i := 0; i < o.lookups; i++ {
			objs, err := indexer.ByIndex("by-node", nodes[i%len(nodes)])
			if err != nil {
				return nil, err
			}
			found += len(objs)
		}
		took := time.Since(start)
		res["lookups"] = o.lookups
		res["lookups_per_s"] = float64(o.lookups) / took.Seconds()
		res["found_per_lookup"] = float64(found) / float64(o.lookups)
	}
	close(stop)
	factory.Shutdown()
	return res, nil
}

func watchScenario(o options) (map[string]any, error) {
	cs, err := clientset(o)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(o.namespace))
	informer := factory.Core().V1().ConfigMaps().Informer()
	queue := workqueue.NewTyped[string]()
	var counts [3]atomic.Int64
	var firstNanos atomic.Int64
	latencies := make([]int64, 0, o.count) // appended by handler 0's goroutine only
	done := make(chan struct{})
	var remaining atomic.Int64
	remaining.Store(3)
	for h := 0; h < 3; h++ {
		h := h
		_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, newObj any) {
				now := time.Now().UnixNano()
				firstNanos.CompareAndSwap(0, now)
				cm := newObj.(*corev1.ConfigMap)
				if h == 0 {
					if at, err := strconv.ParseInt(cm.Annotations[writtenAt], 10, 64); err == nil {
						latencies = append(latencies, now-at)
					}
				}
				if key, err := cache.MetaNamespaceKeyFunc(newObj); err == nil {
					queue.Add(key)
				}
				if counts[h].Add(1) == int64(o.count) && remaining.Add(-1) == 0 {
					close(done)
				}
			},
		})
		if err != nil {
			return nil, err
		}
	}
	var processed atomic.Int64
	var workers sync.WaitGroup
	for w := 0; w < 2; w++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				key, shutdown := queue.Get()
				if shutdown {
					return
				}
				processed.Add(1)
				queue.Done(key)
			}
		}()
	}
	stop := make(chan struct{})
	factory.Start(stop)
	waitSynced(informer.HasSynced)
	fmt.Println(`{"ready":true}`)
	// Every handler saw every update, or nothing arrived for 30 s (the watch fell behind).
	var last int64 = -1
	idle := time.Now()
wait:
	for {
		select {
		case <-done:
			break wait
		case <-time.After(100 * time.Millisecond):
			n := counts[0].Load() + counts[1].Load() + counts[2].Load()
			if n != last {
				last, idle = n, time.Now()
			} else if time.Since(idle) > 30*time.Second {
				break wait
			}
		}
	}
	for queue.Len() > 0 {
		time.Sleep(time.Millisecond)
	}
	end := time.Now().UnixNano()
	queue.ShutDown()
	workers.Wait()
	close(stop)
	factory.Shutdown()
	delivered := min(counts[0].Load(), counts[1].Load(), counts[2].Load())
	elapsed := float64(end-firstNanos.Load()) / 1e9
	res := map[string]any{
		"updates": delivered, "handlers": 3, "seconds": elapsed,
		"events_per_s": float64(delivered) / elapsed, "processed": processed.Load(),
	}
	if len(latencies) > 0 {
		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		res["latency_p50_ms"] = float64(latencies[len(latencies)/2]) / 1e6
		res["latency_p99_ms"] = float64(latencies[len(latencies)*99/100]) / 1e6
	}
	return res, nil
}

func median(times []float64) float64 {
	s := append([]float64(nil), times...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func workqueueScenario(o options) (map[string]any, error) {
	var times []float64
	var items int
	for r := 0; r < o.repeat; r++ {
		start := time.Now()
		switch o.shape {
		case "queue":
			// client-go's BenchmarkQueue: a fresh queue, then 100 keys each added, got and done.
			keys := make([]string, 100)
			for i := range keys {
				keys[i] = fmt.Sprintf("key-%d", i)
			}
			start = time.Now()
			for i := 0; i < o.iterations; i++ {
				q := workqueue.NewTyped[string]()
				for _, k := range keys {
					q.Add(k)
					item, _ := q.Get()
					q.Done(item)
				}
				q.ShutDown()
			}
			items = o.iterations * len(keys)
		case "contended":
			// 4 producers add 10,000 distinct keys each while 2 workers get and done them.
			const producers, perProducer = 4, 10000
			q := workqueue.NewTyped[int]()
			var left atomic.Int64
			left.Store(producers * perProducer)
			var wg sync.WaitGroup
			for w := 0; w < 2; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						item, shutdown := q.Get()
						if shutdown {
							return
						}
						q.Done(item)
						if left.Add(-1) == 0 {
							q.ShutDown()
						}
					}
				}()
			}
			for p := 0; p < producers; p++ {
				wg.Add(1)
				go func(p int) {
					defer wg.Done()
					for i := 0; i < perProducer; i++ {
						q.Add(p*perProducer + i)
					}
				}(p)
			}
			wg.Wait()
			items = producers * perProducer
		default:
			return nil, fmt.Errorf("unknown shape %q", o.shape)
		}
		times = append(times, time.Since(start).Seconds())
	}
	m := median(times)
	return map[string]any{"shape": o.shape, "items": items, "seconds": m, "items_per_s": float64(items) / m}, nil
}

func decodeScenario(o options) (map[string]any, error) {
	cs, err := clientset(o)
	if err != nil {
		return nil, err
	}
	var times []float64
	items := 0
	resetPeak()
	for r := 0; r < o.repeat; r++ {
		runtime.GC()
		start := time.Now()
		list, err := cs.CoreV1().Pods(o.namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		times = append(times, time.Since(start).Seconds())
		items = len(list.Items)
	}
	res := map[string]any{"objects": items, "first_s": times[0], "seconds": times[0], "rss_peak": statusBytes("VmHWM:")}
	if len(times) > 1 {
		res["seconds"] = median(times[1:])
	}
	return res, nil
}
