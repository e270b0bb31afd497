// The chaos test on postgres (test/chaos/scenario.ts says what it does and checks).
import { runChaos } from "./scenario.ts";

await runChaos("postgres");
