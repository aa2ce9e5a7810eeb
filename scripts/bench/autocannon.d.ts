// The part of autocannon 9's API the benches use (the package ships no type declarations).
declare module 'autocannon' {
  namespace autocannon {
    interface RequestParams {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
    }

    interface Request extends RequestParams {
      /** Called before each request a connection sends; returns the request to send. */
      setupRequest?: (request: RequestParams, context: Record<string, unknown>) => RequestParams;
      /** Called with each response (autocannon reads every body anyway). */
      onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string>) => void;
    }

    interface Options {
      url: string;
      connections?: number;
      pipelining?: number;
      /** Seconds. */
      duration?: number;
      /** Seconds without an answer before a request counts as a timeout. */
      timeout?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      requests?: Request[];
      idReplacement?: boolean;
      /** Requests a second over all connections (a fixed rate, not as fast as it goes). */
      overallRate?: number;
      /** Requests in all; the run ends after them (overrides duration). */
      amount?: number;
    }

    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p90: number;
      p97_5: number;
      p99: number;
      p99_9: number;
    }

    interface Result {
      latency: Histogram;
      requests: Histogram;
      throughput: Histogram;
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      resets: number;
      mismatches: number;
      statusCodeStats: Record<string, { count: number }>;
      '2xx': number;
      totalCompletedRequests?: number;
      start: Date;
      finish: Date;
    }
  }

  function autocannon(options: autocannon.Options): Promise<autocannon.Result> & { stop(): void };
  export default autocannon;
}
