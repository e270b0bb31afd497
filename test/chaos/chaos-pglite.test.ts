// The chaos test on pglite (test/chaos/scenario.ts says what it does and checks).
import { runChaos } from "./scenario.ts";

await runChaos("pglite");
