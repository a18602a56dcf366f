import { scaled, useTimeScaleForLoad } from './time-scale';

// Unit specs that use real loopback servers and proxies (libs/actions) wait on the event loop like the
// integration suites do; on a loaded machine jest's default 5 s bound failed them on time alone. The
// scale is the run's (set by the integration project's global setup or by ARO_TEST_TIME_SCALE), else
// derived here from the load, as that setup does.
useTimeScaleForLoad();
jest.setTimeout(scaled(5_000));
