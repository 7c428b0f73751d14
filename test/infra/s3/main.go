// Command lore-test-s3 serves an S3-compatible API on a loopback port for Lore's tests: the blob store's contract
// suite and the cluster-mode upload tests talk to it with the same client the services use in production.
//
// It keeps objects in memory (a restart starts empty), creates the buckets named by -buckets at start, and answers
// path-style requests (http://127.0.0.1:PORT/BUCKET/KEY). It does not check request signatures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:29000", "address to listen on (loopback only)")
	buckets := flag.String("buckets", "lore-test", "comma-separated buckets to create at start")
	version := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *version {
		fmt.Println("lore-test-s3 gofakes3 v1.2.0")
		return
	}

	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		log.Fatalf("bad -addr %q: %v", *addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		log.Fatalf("refusing to listen on %q: loopback addresses only", *addr)
	}

	backend := s3mem.New()
	for _, b := range strings.Split(*buckets, ",") {
		if b = strings.TrimSpace(b); b == "" {
			continue
		}
		if err := backend.CreateBucket(b); err != nil {
			log.Fatalf("create bucket %q: %v", b, err)
		}
	}
	faker := gofakes3.New(backend, gofakes3.WithAutoBucket(false), gofakes3.WithoutVersioning())

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("listen %s: %v", *addr, err)
	}
	srv := &http.Server{Handler: faker.Server(), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("lore-test-s3 listening on %s (buckets: %s)", ln.Addr(), *buckets)

	done := make(chan struct{})
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		close(done)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("serve: %v", err)
	}
	<-done
}
