// The kernel compiles every operation once, at boot, into `kernel.operations`; REST and GraphQL both call
// those invokers. Checked by handing the HTTP app a kernel whose table counts its calls: a transport that
// compiled its own invokers would bypass the count.
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { Kernel } from "../../core/kernel.ts";
import type { OperationTable } from "../../core/operations.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel } from "../../testkit/index.ts";
import { createHttpApp } from "../../transports/http.ts";

test("the kernel's operation table: one frozen entry per registry operation, built once", async () => {
  const tk = await createTestKernel({ plugins: [account] });
  try {
    const table = tk.kernel.operations;
    assert.ok(Object.isFrozen(table));
    assert.is(table.length, tk.kernel.registry.operations.length);
    table.forEach((entry, i) => {
      assert.ok(Object.isFrozen(entry));
      assert.is(entry.op, tk.kernel.registry.operations[i]);
    });
    assert.is(tk.kernel.operations, table, "read again, the same table");
  } finally {
    await tk.close();
  }
});

test("REST and GraphQL call the same invoker from the kernel's table", async () => {
  const tk = await createTestKernel({ plugins: [account] });
  try {
    const calls = new Map<string, string[]>();
    const counted: OperationTable = tk.kernel.operations.map(({ op, invoke }) => ({
      op,
      invoke: (call) => {
        calls.set(op.endpoint, [...(calls.get(op.endpoint) ?? []), new URL(call.request.url).pathname]);
        return invoke(call);
      },
    }));
    const kernel: Kernel = { ...tk.kernel, operations: counted };
    const app = createHttpApp(kernel, { adminToken: tk.adminToken });
    const { key } = await tk.partner({ credits: 7 });
    const headers = { authorization: `Bearer ${key}`, "user-agent": "tests/1.0", "content-type": "application/json" };

    const rest = await app.fetch(new Request("http://t/api/v1/partner/me", { headers }));
    assert.is(rest.status, 200);
    const gql = await app.fetch(
      new Request("http://t/graphql", {
        method: "POST",
        headers,
        body: JSON.stringify({ query: "{ me { credits_remaining } }" }),
      }),
    );
    assert.is(((await gql.json()) as any).data.me.credits_remaining, 7);

    assert.equal(calls.get("GET /me"), ["/api/v1/partner/me", "/graphql"]);
  } finally {
    await tk.close();
  }
});

test.run();
