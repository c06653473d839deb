import{a as A,d as O,e as F}from"./chunk-EACNBFJA.js";import{a as n,c as f,d as b,e as S,f as j}from"./chunk-B3XSBJZ7.js";import{a as _,b as m}from"./chunk-D27MZLAW.js";var U=["run","session","host","tool"];function oe(s){return[...new Set(s.keys())].sort((t,r)=>{let o=U.indexOf(t),i=U.indexOf(r);return(o<0?99:o)-(i<0?99:i)||t.localeCompare(r)}).map(t=>`${encodeURIComponent(t)}=${encodeURIComponent(s.get(t)??"")}`).join("&")}function ne(s,e){let t=s.startsWith("#")?s.slice(1):s;if(e){if(t!==e&&!t.startsWith(`${e}&`))return new URLSearchParams;t=t.slice(e.length+1)}return new URLSearchParams(t)}function z(s,e){let t=oe(e);return s?t?`#${s}&${t}`:`#${s}`:`#${t}`}var k=class{constructor(e,t,r){this.where=e;this.win=t;this.prefix=r}where;win;prefix;read(){return ne(this.win.location.hash,this.prefix)}write(e,t=!1){let r=z(this.prefix,e),o=this.win.location.hash;r!==o&&(this.prefix&&o!==`#${this.prefix}`&&!o.startsWith(`#${this.prefix}&`)||(t?this.win.history.pushState(this.win.history.state,"",r):this.win.history.replaceState(this.win.history.state,"",r)))}href(e){let t=new URL(this.win.location.href);return t.hash=z(this.prefix,e),t.href}listen(e){return this.win.addEventListener("hashchange",e),()=>this.win.removeEventListener("hashchange",e)}};function ie(s,e){try{let t=s.top;if(!t||t===s)return null;let r=t.location.hash;return r===`#${e}`||r.startsWith(`#${e}&`)?t:null}catch{return null}}function D(s=window,e="profscope"){let t=ie(s,e);return t?new k("top",t,e):new k("self",s,"")}var ae=_({"./compare/index.ts":()=>import("./views/compare.js"),"./memory/index.ts":()=>import("./views/memory.js"),"./overview/index.ts":()=>import("./views/overview.js"),"./roofline/index.ts":()=>import("./views/roofline.js"),"./trace/index.ts":()=>import("./views/trace.js"),"./xla/index.ts":()=>import("./views/xla.js")});var x=m;function L(s){return x.some(e=>e.id===s)}function y(s){let e=x.find(t=>t.id===s);if(!e)throw new Error(`unknown tool "${s}"; the tools are ${x.map(t=>t.id).join(", ")}`);return e}async function N(s){return y(s),await ae(`./${s}/index.ts`)}function H(s){let e=[],t=new Map,r=new Map;for(let p of s){let l=p.filter(L);for(let a of l)t.has(a)||(e.push(a),t.set(a,new Set),r.set(a,0));for(let a=1;a<l.length;a++){let[u,c]=[l[a-1],l[a]],d=t.get(u);u!==c&&!d.has(c)&&(d.add(c),r.set(c,r.get(c)+1))}}let o=[],i=new Set(e);for(;i.size;){let p=e.find(l=>i.has(l)&&r.get(l)<=0)??e.find(l=>i.has(l));i.delete(p),o.push(p);for(let l of t.get(p))r.set(l,r.get(l)-1)}return[...o.map(y),...x.filter(p=>!t.has(p.id))]}var W=`.ps-capture { position: fixed; inset: 0; background: var(--ps-scrim); display: flex; align-items: flex-start; justify-content: center; z-index: 50; overflow: auto; }
.ps-capture[hidden] { display: none; }
.ps-capture-box { background: var(--ps-bg); margin-top: 48px; padding: 14px 18px; border-radius: 6px; width: min(640px, 94vw); box-shadow: 0 8px 28px rgba(0, 0, 0, 0.25); }
.ps-capture-box h2 { margin: 0 0 6px; font-size: 16px; }
.ps-capture-hint { color: var(--ps-text-soft); margin: 0 0 10px; font-size: 12px; }
.ps-capture-form[hidden] { display: none; }
.ps-capture-field { display: flex; flex-direction: column; gap: 2px; margin-bottom: 8px; flex: 1; }
.ps-capture-field > span { color: var(--ps-text-strong); font-size: 12px; font-weight: 600; }
.ps-capture-field small { color: var(--ps-text-muted); font-size: 11px; }
.ps-capture-field input[type="text"] { font-family: monospace; }
.ps-capture-row { display: flex; gap: 12px; }
.ps-capture-run { border: 1px solid var(--ps-line); border-radius: 4px; margin: 0 0 8px; display: flex; flex-direction: column; gap: 4px; }
.ps-capture-run legend { font-size: 12px; font-weight: 600; color: var(--ps-text-strong); }
.ps-capture-progress { display: flex; align-items: center; gap: 8px; margin: 6px 0; }
.ps-capture-progress[hidden] { display: none; }
.ps-capture-progress progress { width: 180px; }
.ps-capture-actions { margin: 8px 0; }
.ps-capture-start { background: #1a73e8; border-color: #1a73e8; color: #fff; }
.ps-capture-start:hover { background: #1765cc; }
.ps-capture-start:disabled { opacity: 0.6; cursor: progress; }
.ps-capture-off { background: var(--ps-notice-bg); border: 1px solid var(--ps-notice-border); border-radius: 4px; padding: 4px 10px; margin-bottom: 8px; }
.ps-capture-snippet { background: var(--ps-bg-subtle); border: 1px solid var(--ps-border-soft); border-radius: 4px; padding: 8px; font-size: 12px; overflow: auto; white-space: pre; user-select: all; }
.ps-capture-pytorch summary { cursor: pointer; color: var(--ps-text); font-weight: 600; font-size: 13px; }
.ps-capture .ps-error[hidden] { display: none; }
`;var v={addresses:"localhost:9012",durationMs:2e3,delayMs:0,hostTracerLevel:2,pythonTracerLevel:0,deviceTracerLevel:1,run:"capture"},R=6e5,le=3e3,de=/^(?:[A-Za-z0-9][A-Za-z0-9.-]*|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/,ce=/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/,B="profscope.capture.addresses";function w(s){return s.split(/[\s,]+/).map(e=>e.trim()).filter(e=>e!=="")}function V(s){let e=[],t=w(s.addresses);t.length||e.push("Give at least one profiler server address (host:port).");for(let o of t)de.test(o)||e.push(`"${o}" is not host:port (e.g. localhost:9012).`);(!Number.isInteger(s.durationMs)||s.durationMs<1||s.durationMs>R)&&e.push(`Duration is 1 to ${R} ms.`),(!Number.isInteger(s.delayMs)||s.delayMs<0||s.delayMs>R)&&e.push(`Delay is 0 to ${R} ms.`);let r=s.run.split("/");return s.run!=="."&&(!s.run||!r.every(o=>ce.test(o))||r.includes("plugins"))&&e.push("Run is a folder name: letters, digits, _ - . and / between parts."),e}function ue(s){return{addresses:w(s.addresses),duration_ms:s.durationMs,delay_ms:s.delayMs,host_tracer_level:s.hostTracerLevel,python_tracer_level:s.pythonTracerLevel,device_tracer_level:s.deviceTracerLevel,run:s.run}}function K(s){return s.delayMs+s.durationMs+le}function X(s,e){let t=w(s.addresses).length,r=t===1?w(s.addresses)[0]:`${t} servers`,o=i=>`${(i/1e3).toFixed(1)} s`;return e<s.delayMs?`Waiting ${o(s.delayMs-e)} before recording on ${r}…`:e<s.delayMs+s.durationMs?`Recording on ${r}: ${o(e-s.delayMs)} of ${o(s.durationMs)}…`:`Recorded; ${r} writing the profile into the logdir…`}function J(s){try{return s?.getItem(B)||v.addresses}catch{return v.addresses}}function G(s,e){try{s?.setItem(B,w(e).join(", "))}catch{}}function Z(s,e){let t=`${s.replace(/\/+$/,"")}/${e==="."?"":e}`.replace(/\/$/,"");return["import torch","from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler","","with profile(","    activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],","    schedule=schedule(wait=1, warmup=1, active=3, repeat=1),",`    on_trace_ready=tensorboard_trace_handler(${JSON.stringify(t)}),`,"    record_shapes=True,","    profile_memory=True,","    with_stack=True,",") as prof:","    for batch in loader:","        train_step(batch)","        prof.step()  # one call per step: the schedule counts them"].join(`
`)}var T=class extends Error{constructor(t,r,o){super(t);this.status=r;this.kind=o}status;kind;name="CaptureFailed"},P=class{constructor(e,t){this.base=e;this.fetchImpl=t??((r,o)=>fetch(r,o))}base;fetchImpl;async status(e){let t=await this.fetchImpl(new URL("capture/status",this.base).href,{signal:e,credentials:"same-origin"});if(!t.ok)throw new T(await t.text(),t.status,"status");return await t.json()}async capture(e,t){let r=await this.fetchImpl(new URL("capture",this.base).href,{method:"POST",signal:t,credentials:"same-origin",headers:{"Content-Type":"application/json","X-XSRF-Protected":"1"},body:JSON.stringify(ue(e))});if(!r.ok){let o=(await r.text()).trim()||`HTTP ${r.status}`;throw new T(o,r.status,r.headers.get("X-Profscope-Capture-Error")??"")}return await r.json()}};var he=["0 — off","1 — user annotations","2 — default","3 — verbose"],Y=["0 — off","1 — on"];function M(s,e,t){let r=n("select",{"data-testid":s});return e.forEach((o,i)=>r.append(n("option",{value:String(i)},o))),r.value=String(t),r}function q(){try{return window.localStorage}catch{return null}}var C=class{constructor(e,t,r){this.host=t;j("ps-capture-style",W),this.api=new P(e,r),this.button.addEventListener("click",()=>{this.open()}),this.duration.value=String(v.durationMs),this.delay.value=String(v.delayMs),this.runName.value=v.run,this.runName.addEventListener("input",()=>{this.newRun.checked=!0,this.renderSnippet()}),this.runSelect.addEventListener("change",()=>{this.existingRun.checked=!0,this.renderSnippet()});for(let a of[this.newRun,this.existingRun])a.addEventListener("change",()=>this.renderSnippet());this.progress.append(this.bar," ",this.progressLine);let o=(a,u,c="")=>n("label",{class:"ps-capture-field"},n("span",{},a),u,c?n("small",{},c):null);this.form.append(o("Profiler servers",this.addresses,"host:port of each job's profiler server, comma-separated"),n("div",{class:"ps-capture-row"},o("Duration (ms)",this.duration),o("Delay (ms)",this.delay)),n("div",{class:"ps-capture-row"},o("Host tracer",this.hostLevel),o("Python tracer",this.pythonLevel),o("Device tracer",this.deviceLevel)),n("fieldset",{class:"ps-capture-run"},n("legend",{},"Into run"),n("label",{},this.newRun," New run ",this.runName),n("label",{},this.existingRun," Existing run ",this.runSelect)),this.progress,this.problem),this.form.addEventListener("submit",a=>{a.preventDefault(),this.capture()});let i=n("button",{type:"button",class:"ps-button","data-testid":"capture-close"},"Close");i.addEventListener("click",()=>this.close());let p=n("button",{type:"button",class:"ps-button","data-testid":"capture-copy"},"Copy");p.addEventListener("click",()=>{this.copySnippet(p)});let l=n("div",{class:"ps-capture-box"},n("h2",{},"Capture a profile"),n("p",{class:"ps-capture-hint"},"Records the running jobs for a while through their profiler servers (JAX, TensorFlow, PyTorch/XLA); each job writes its profile into the logdir, as a new session."),this.off,this.form,n("p",{class:"ps-capture-actions"},this.start," ",i),n("details",{class:"ps-capture-pytorch","data-testid":"capture-pytorch"},n("summary",{},"PyTorch (no profiler server): write a trace into the logdir"),n("p",{},"Profile the training loop with torch.profiler; the trace lands where this tab reads it:"),this.snippet,p));this.start.addEventListener("click",()=>{this.capture()}),this.el=n("div",{class:"ps-capture",role:"dialog","aria-label":"Capture a profile","data-testid":"capture-dialog",hidden:!0},l),this.el.addEventListener("click",a=>{a.target===this.el&&this.close()}),this.el.addEventListener("keydown",a=>{a.key==="Escape"&&this.close(),a.stopPropagation()})}host;button=n("button",{class:"ps-button",type:"button","data-testid":"capture-button",title:"Capture a profile from running jobs into the logdir"},"Capture…");el;api;off=n("div",{class:"ps-capture-off","data-testid":"capture-off",hidden:!0});form=n("form",{class:"ps-capture-form","data-testid":"capture-form"});addresses=n("input",{type:"text","data-testid":"capture-addresses",placeholder:"localhost:9012, worker-1:9012",spellcheck:"false"});duration=n("input",{type:"number",min:1,max:6e5,step:100,"data-testid":"capture-duration"});delay=n("input",{type:"number",min:0,max:6e5,step:100,"data-testid":"capture-delay"});hostLevel=M("capture-host-level",he,v.hostTracerLevel);pythonLevel=M("capture-python-level",Y,v.pythonTracerLevel);deviceLevel=M("capture-device-level",Y,v.deviceTracerLevel);newRun=n("input",{type:"radio",name:"ps-capture-run",value:"new",checked:!0,"data-testid":"capture-run-new"});existingRun=n("input",{type:"radio",name:"ps-capture-run",value:"existing","data-testid":"capture-run-existing"});runName=n("input",{type:"text","data-testid":"capture-run-name",spellcheck:"false"});runSelect=n("select",{"data-testid":"capture-run-select"});start=n("button",{type:"button",class:"ps-button ps-capture-start","data-testid":"capture-start"},"Capture");progress=n("div",{class:"ps-capture-progress","data-testid":"capture-progress","aria-live":"polite",hidden:!0});bar=n("progress",{max:1,value:0});progressLine=n("span",{});problem=n("div",{class:"ps-error",role:"alert","data-testid":"capture-error",hidden:!0});snippet=n("pre",{class:"ps-capture-snippet","data-testid":"capture-snippet"});status=null;running=null;ticker=null;get isOpen(){return!this.el.hidden}async open(){let e=this.host.runs();f(this.runSelect);for(let r of e)this.runSelect.append(n("option",{value:r},r));let t=this.host.currentRun();t&&e.includes(t)&&(this.runSelect.value=t),this.existingRun.disabled=this.runSelect.disabled=!e.length,this.running||(this.addresses.value=J(q())),this.el.hidden=!1,this.addresses.focus(),this.renderSnippet();try{this.status=await this.api.status()}catch(r){this.status=null,this.showOff(`Cannot ask the server whether capturing is on: ${b(r)}`);return}this.renderSnippet(),this.status.enabled?this.status.grpc_installed?(this.off.hidden=!0,this.form.hidden=!1,this.start.hidden=!1):this.showOff("Capturing needs gRPC on the TensorBoard machine: pip install 'profscope[capture]', then restart TensorBoard."):this.showOff(this.status.message)}close(){this.el.hidden=!0}values(){return{addresses:this.addresses.value,durationMs:Number(this.duration.value),delayMs:Number(this.delay.value||0),hostTracerLevel:Number(this.hostLevel.value),pythonTracerLevel:Number(this.pythonLevel.value),deviceTracerLevel:Number(this.deviceLevel.value),run:this.existingRun.checked?this.runSelect.value:this.runName.value.trim()}}async capture(){if(this.running)return;let e=this.values(),t=V(e);if(t.length)return this.showProblem(t.join(" "));this.problem.hidden=!0,G(q(),e.addresses);let r=this.running=new AbortController;this.start.disabled=!0,this.progress.hidden=!1;let o=Date.now(),i=()=>{let p=Date.now()-o;this.bar.value=Math.min(.99,p/K(e)),this.progressLine.textContent=X(e,p)};i(),this.ticker=setInterval(i,200);try{let p=await this.api.capture(e,r.signal);this.progressLine.textContent=`Captured session ${p.session} (${p.hosts.join(", ")}).`,this.bar.value=1,this.close(),this.host.landed(p)}catch(p){S(p)||(this.progress.hidden=!0,this.showProblem(`Capture failed: ${b(p)}`))}finally{this.ticker&&clearInterval(this.ticker),this.ticker=null,this.running=null,this.start.disabled=!1}}showOff(e){f(this.off);let t=this.status?.logdir||"LOGDIR";this.off.append(n("p",{},e),n("p",{},"To capture from jobs on this machine, restart TensorBoard with:"),n("pre",{class:"ps-capture-snippet"},`tensorboard --logdir ${t} --profscope_capture`),n("p",{},"Or capture from a terminal: profscope capture localhost:9012 --logdir ",t," --run NAME")),this.off.hidden=!1,this.form.hidden=!0,this.start.hidden=!0}showProblem(e){this.problem.textContent=e,this.problem.hidden=!1}renderSnippet(){let e=this.existingRun.checked?this.runSelect.value:this.runName.value.trim()||v.run;this.snippet.textContent=Z(this.status?.logdir||"LOGDIR",e)}async copySnippet(e){try{await navigator.clipboard.writeText(this.snippet.textContent??""),e.textContent="Copied"}catch{let t=document.createRange();t.selectNodeContents(this.snippet),window.getSelection()?.removeAllRanges(),window.getSelection()?.addRange(t),e.textContent="Selected: press Ctrl+C"}setTimeout(()=>{e.textContent="Copy"},1500)}};function fe(s){return s.sessions.flatMap(e=>e.hosts.flatMap(t=>t.files))}function ve(s){return s.format_label??s.format??"unknown format"}function Q(s){return s.label??s.name}function ee(s){let e=fe(s),t=[...new Set(e.filter(i=>!i.error&&i.format).map(ve))],r=e.filter(i=>i.error).length,o=[t.length?`${s.name} — ${t.join(", ")}`:s.name];return s.sessions.length>1&&o.push(`${s.sessions.length} sessions`),r&&o.push(`${r} unreadable file${r>1?"s":""}`),o.join(" · ")}var me=new Set(["run","session","host","tool"]);function ge(s){return s.runs.flatMap(e=>e.sessions.flatMap(t=>t.hosts.map(r=>r.tools)))}function $(s){let e=new Set;for(let t of s)for(let r of t.tools)L(r)&&e.add(r);return e}var E=class{constructor(e,t){this.client=e;this.store=t;this.pickers=n("div",{class:"ps-pickers"},n("label",{},n("span",{},"Run"),this.runSelect),n("label",{},n("span",{},"Session"),this.sessionSelect),n("label",{},n("span",{},"Host"),this.hostSelect));let r=n("button",{class:"ps-button ps-icon-button",type:"button",title:"Reload the list of runs","aria-label":"Reload runs","data-testid":"reload-runs"},"↻");r.addEventListener("click",()=>{this.loadRuns()}),this.linkButton.addEventListener("click",()=>{this.copyLink()}),this.linkButton.title=t.where==="top"?"The address bar always holds a link to this view; this copies it":"Copy a link that reopens this view",this.captureDialog=new C(e.base,{runs:()=>this.runs?.runs.map(o=>o.name)??[],currentRun:()=>this.sel?.run??null,landed:o=>this.showCaptured(o)}),this.el=n("div",{class:"ps-app"},n("header",{class:"ps-bar"},this.pickers,this.captureDialog.button,this.tabs,n("span",{class:"ps-spacer"}),this.linkButton,r),this.notices,this.main,this.captureDialog.el),this.runSelect.addEventListener("change",()=>this.pick({run:this.runSelect.value})),this.sessionSelect.addEventListener("change",()=>this.pick({session:this.sessionSelect.value})),this.hostSelect.addEventListener("change",()=>this.pick({hosts:this.hostSelect.value.split(",")})),t.listen(()=>this.applyFragment())}client;store;runs=null;tabList=x;sel=null;viewParams=new URLSearchParams;views=new Map;subjectKey="";runsAbort=null;logdirErrors=[];el;runSelect=n("select",{"data-testid":"run-select","aria-label":"Run"});sessionSelect=n("select",{"data-testid":"session-select","aria-label":"Session"});hostSelect=n("select",{"data-testid":"host-select","aria-label":"Host"});tabs=n("nav",{class:"ps-tabs",role:"tablist"});notices=n("div",{class:"ps-notices"});main=n("main",{class:"ps-main"});linkButton=n("button",{class:"ps-button","data-testid":"copy-link",type:"button"},"Copy link");pickers;captureDialog;async loadRuns(){this.runsAbort?.abort();let e=this.runsAbort=new AbortController;this.pickers.hidden=!0,this.setMessage(n("div",{class:"ps-loading","data-testid":"runs-loading"},"Loading runs…"));try{this.runs=await this.client.runs(e.signal)}catch(t){if(S(t))return;let r=n("button",{class:"ps-button",type:"button"},"Retry");r.addEventListener("click",()=>{this.loadRuns()}),this.setMessage(n("div",{class:"ps-error",role:"alert","data-testid":"runs-error"},`Could not list runs: ${b(t)} `,r));return}if(this.logdirErrors=this.runs.errors??[],this.tabList=H(ge(this.runs)),!this.runs.runs.length){let t=this.runs.empty_message||`No profiles found under ${this.runs.logdir}. Write a profile there (TensorFlow, JAX, PyTorch or PyTorch/XLA) and reload.`;this.renderTabs(),this.renderNotices([],null),this.setMessage(n("div",{class:"ps-empty","data-testid":"empty-logdir"},t));return}this.pickers.hidden=!1,this.applyFragment()}showCaptured(e){this.store.write(new URLSearchParams({run:e.run,session:e.session}),!0),this.loadRuns()}setMessage(e){this.unmountAll(),f(this.main),this.main.append(e)}applyFragment(){if(!this.runs||!this.runs.runs.length)return;let e=this.store.read(),t=new URLSearchParams;for(let[i,p]of e)me.has(i)||t.set(i,p);this.viewParams=t;let r=e.get("host"),o=e.get("tool");this.select({run:e.get("run")??"",session:e.get("session")??"",hosts:r?r.split(","):[],tool:L(o)?o:null},!0)}pick(e){if(!this.sel)return;let t={...this.sel,...e};e.run&&(t.session=""),(e.run||e.session)&&(t.hosts=[]),this.viewParams=new URLSearchParams,this.select(t,!1,!0)}select(e,t,r=!1){let o=this.runs.runs,i=o.find(h=>h.name===e.run)??o[0],p=i.sessions.find(h=>h.name===e.session)??i.sessions[0],l=new Set(p?p.hosts.map(h=>h.name):[]),a=e.hosts.filter(h=>l.has(h));!a.length&&p?.hosts.length&&(a=[p.hosts[0].name]);let u=p?p.hosts.filter(h=>a.includes(h.name)):[],c=$(u),d=e.tool;(d===null||!c.has(d))&&(d=this.tabList.find(h=>c.has(h.id))?.id??e.tool??this.tabList[0].id);let g=t&&e.run!==""&&(i.name!==e.run||e.session!==""&&p?.name!==e.session);g&&(this.viewParams=new URLSearchParams),this.sel={run:i.name,session:p?p.name:"",hosts:a,tool:d},this.renderPickers(i,p),this.renderTabs(),this.renderNotices(u,g?e:null),this.writeFragment(r),this.showTool(u,c)}renderPickers(e,t){let r=this.sel,o=(a,u,c)=>{f(a);for(let d of u)a.append(n("option",{value:d.value},d.text));a.value=c,a.disabled=u.length<2},i=this.runs.runs;o(this.runSelect,i.map(a=>({value:a.name,text:ee(a)})),e.name),o(this.sessionSelect,e.sessions.map(a=>({value:a.name,text:Q(a)})),r.session);let p=t?t.hosts:[],l=p.map(a=>({value:a.name,text:a.name}));if(p.length>1){let a=p.map(c=>c.name).join(",");l.unshift({value:a,text:`All ${p.length} hosts (merged timeline)`});let u=r.hosts.join(",");r.hosts.length>1&&u!==a&&l.push({value:u,text:`${r.hosts.length} hosts: ${u}`})}o(this.hostSelect,l,r.hosts.join(","))}renderTabs(){f(this.tabs);let e=this.sel,t=e?this.currentSession():void 0,r=t&&e?t.hosts.filter(i=>e.hosts.includes(i.name)):[],o=$(r);for(let i of this.tabList){let p=e?.tool===i.id,l=o.has(i.id),a=n("button",{type:"button",role:"tab",class:`ps-tab${p?" active":""}`,"data-testid":`tab-${i.id}`,"aria-selected":p?"true":"false",disabled:!l,title:l?i.title:`${i.title}: no data for this tool in the selected host`},i.title);a.addEventListener("click",()=>this.switchTool(i.id)),this.tabs.append(a)}}renderNotices(e,t){f(this.notices);for(let r of this.logdirErrors)this.notices.append(n("div",{class:"ps-notice",role:"status"},r));t&&this.notices.append(n("div",{class:"ps-notice"},`The link names run "${t.run}"${t.session?`, session "${t.session}"`:""}, which is not in this logdir; showing the first run instead.`));for(let r of e)for(let o of r.files)o.error&&this.notices.append(n("div",{class:"ps-notice",role:"status"},`${r.name}: ${o.path} could not be read: ${o.error}`))}currentSession(){let e=this.sel;if(!(!e||!this.runs))return this.runs.runs.find(t=>t.name===e.run)?.sessions.find(t=>t.name===e.session)}subject(){let e=this.sel;return{run:e.run,session:e.session,hosts:e.hosts}}writeFragment(e=!1){let t=this.sel;if(!t)return;let r=new URLSearchParams({run:t.run,session:t.session,host:t.hosts.join(","),tool:t.tool});for(let[o,i]of this.viewParams)r.set(o,i);this.store.write(r,e)}currentParams(){let e=this.sel,t=new URLSearchParams({run:e.run,session:e.session,host:e.hosts.join(","),tool:e.tool});for(let[r,o]of this.viewParams)t.set(r,o);return t}async copyLink(){if(!this.sel)return;let e=this.store.href(this.currentParams());try{await navigator.clipboard.writeText(e),this.linkButton.textContent="Link copied"}catch{window.prompt("Link to this view:",e)}setTimeout(()=>{this.linkButton.textContent="Copy link"},1500)}switchTool(e,t){if(!this.sel)return;let r=e!==this.sel.tool||t!==void 0;this.sel={...this.sel,tool:e},t&&(this.viewParams=new URLSearchParams(t)),this.renderTabs(),this.writeFragment(r);let o=this.currentSession(),i=o?o.hosts.filter(p=>this.sel.hosts.includes(p.name)):[];this.showTool(i,$(i),t!==void 0)}unmountAll(){for(let e of this.views.values())e.abort.abort(),e.instance?.unmount?.(),e.container.remove();this.views.clear(),this.subjectKey=""}showTool(e,t,r=!1){let o=this.sel,i=JSON.stringify(this.subject());i!==this.subjectKey&&(this.unmountAll(),f(this.main),this.subjectKey=i);for(let d of this.views.values())d.container.hidden=d.tool!==o.tool;let p=this.views.get(o.tool);if(p){p.instance?.show?.(),(r||this.viewParams.toString())&&p.instance?.update?.(new URLSearchParams(this.viewParams));return}let l=n("section",{class:"ps-view","data-testid":`view-${o.tool}`,role:"tabpanel"}),a={tool:o.tool,container:l,instance:null,abort:new AbortController};this.views.set(o.tool,a),this.main.append(l);let u=y(o.tool);if(!t.has(o.tool)){l.append(n("div",{class:"ps-empty"},`${u.title}: the selected host has no data for this tool.`));return}l.append(n("div",{class:"ps-loading"},"Loading view…"));let c=this.subject();N(o.tool).then(d=>{a.abort.signal.aborted||(f(l),a.instance=d.mount(l,{client:this.client,subject:c,hosts:e,params:new URLSearchParams(this.viewParams),signal:a.abort.signal,setParams:g=>{if(!(a.abort.signal.aborted||this.sel?.tool!==a.tool)){for(let[h,I]of Object.entries(g))I===void 0?this.viewParams.delete(h):this.viewParams.set(h,I);this.writeFragment()}},navigate:(g,h)=>this.switchTool(y(g).id,h)}))},d=>{if(a.abort.signal.aborted)return;f(l);let g=d instanceof A?d.message:`could not load the ${o.tool} view (${b(d)})`;l.append(n("div",{class:"ps-error",role:"alert"},g))})}};var te=`/* profscope: shell and trace viewer. Scoped by class prefixes ps- (shell) and tv- (trace view).
 * Colours are variables: light by default, dark under data-theme="dark" (set by theme.ts). */
:root {
  color-scheme: light;
  --ps-text: #1f2937;
  --ps-text-muted: #6b7280;
  --ps-text-soft: #4b5563;
  --ps-bg: #fff;
  --ps-bg-bar: #f8f9fb;
  --ps-bg-hover: #eef1f5;
  --ps-border: #c9d1dc;
  --ps-border-soft: #e5e7eb;
  --ps-line: #dde2e8;
  --ps-accent: #0b57d0;
  --ps-accent-bg: #e8f0fe;
  --ps-accent-border: #1a73e8;
  --ps-disabled: #a0a7b1;
  --ps-notice-bg: #fff8e1;
  --ps-notice-border: #f3e3a6;
  --ps-error: #a50e0e;
  --ps-error-bg: #fce8e6;
  --ps-overlay: rgba(255, 255, 255, 0.92);
  --ps-row-line: #f0f1f3;
  --ps-row-hover: #f3f6fb;
  --ps-row-picked: #e8f0fe;
  --ps-shadow: rgba(0, 0, 0, 0.15);
  --tv-measure-bg: #fff4e8;
  /* Shared by the tabs' stylesheets (views/*/*.css, shared/*.css, shell/*.css). */
  --ps-text-strong: #374151;
  --ps-text-faint: #9ca3af;
  --ps-bg-card: #fbfcfd;
  --ps-bg-subtle: #f8f9fa;
  --ps-border-faint: #eef0f3;
  --ps-highlight-bg: #fef7e0;
  --ps-highlight-border: #fde293;
  --ps-info-border: #c6dafc;
  --ps-good: #137333;
  --ps-good-bg: #e6f4ea;
  --ps-warn-text: #b06000;
  --ps-error-strong: #d93025;
  --ps-scrim: rgba(17, 24, 39, 0.35);
  /* Lines a chart draws in the text colour (shared/chart_theme.ts \`ink\`), for HTML legends. */
  --ps-chart-ink: #202124;
  /* Graphviz drawings (white nodes, dark text) are shown inverted in the dark theme. */
  --ps-drawing-filter: none;
}
:root[data-theme="dark"] {
  color-scheme: dark;
  /* Firefox keeps light scrollbars in a framed page that turned dark after it loaded. */
  scrollbar-color: #4a4e55 #1e1f22;
  --ps-text: #e3e5e8;
  --ps-text-muted: #9aa0a6;
  --ps-text-soft: #b4b8bf;
  --ps-bg: #1e1f22;
  --ps-bg-bar: #26282c;
  --ps-bg-hover: #33363b;
  --ps-border: #4a4e55;
  --ps-border-soft: #34373c;
  --ps-line: #34373c;
  --ps-accent: #8ab4f8;
  --ps-accent-bg: #263a57;
  --ps-accent-border: #8ab4f8;
  --ps-disabled: #5f6368;
  --ps-notice-bg: #3d3420;
  --ps-notice-border: #5c4d26;
  --ps-error: #f6aea9;
  --ps-error-bg: #4a2523;
  --ps-overlay: rgba(30, 31, 34, 0.92);
  --ps-row-line: #2c2e33;
  --ps-row-hover: #2a2d33;
  --ps-row-picked: #263a57;
  --ps-shadow: rgba(0, 0, 0, 0.5);
  --tv-measure-bg: #3a2a1a;
  --ps-text-strong: #d0d3d8;
  --ps-text-faint: #80868b;
  --ps-bg-card: #25272b;
  --ps-bg-subtle: #2a2c30;
  --ps-border-faint: #303338;
  --ps-highlight-bg: #3a3322;
  --ps-highlight-border: #6b5a22;
  --ps-info-border: #35507a;
  --ps-good: #81c995;
  --ps-good-bg: #1f3a2a;
  --ps-warn-text: #fdd663;
  --ps-error-strong: #f28b82;
  --ps-scrim: rgba(0, 0, 0, 0.6);
  --ps-chart-ink: #e8eaed;
  --ps-drawing-filter: invert(0.88) hue-rotate(180deg);
}
.ps-root {
  margin: 0;
  height: 100vh;
  font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--ps-text);
  background: var(--ps-bg);
  overflow: hidden;
}
.ps-root [hidden] { display: none !important; }
.ps-app { display: flex; flex-direction: column; height: 100%; }
/* One line from 1100 px: the pickers' selects give up width before anything wraps (every pixel of
   height is the timeline's). */
.ps-bar {
  display: flex; align-items: center; gap: 10px; flex-wrap: nowrap;
  padding: 4px 10px; border-bottom: 1px solid var(--ps-line); background: var(--ps-bg-bar);
}
.ps-bar > * { flex: none; }
.ps-bar > .ps-pickers { flex: 0 1 auto; min-width: 0; }
.ps-pickers { display: flex; gap: 10px; flex-wrap: nowrap; }
/* The run's name is the long one: it gives up width first. */
.ps-pickers label { display: flex; align-items: center; gap: 4px; min-width: 0; flex: none; }
.ps-pickers label:first-child { flex: 0 1 auto; }
.ps-pickers label > span { color: var(--ps-text-muted); font-size: 12px; }
.ps-pickers select { max-width: 280px; min-width: 72px; flex: 0 1 auto; font: inherit; padding: 2px 4px; text-overflow: ellipsis; }
@media (max-width: 1100px) {
  .ps-bar { flex-wrap: wrap; }
}
.ps-tabs { display: flex; gap: 2px; }
.ps-tab {
  font: inherit; padding: 4px 10px; border: 1px solid transparent; border-radius: 4px;
  background: none; cursor: pointer; color: var(--ps-text);
}
.ps-tab:hover:not(:disabled) { background: var(--ps-bg-hover); }
.ps-tab.active { background: var(--ps-bg); border-color: var(--ps-border); color: var(--ps-accent); font-weight: 600; }
.ps-tab:disabled { color: var(--ps-disabled); cursor: not-allowed; }
.ps-spacer { flex: 1; }
.ps-button {
  font: inherit; padding: 2px 10px; border: 1px solid var(--ps-border); border-radius: 4px;
  background: var(--ps-bg); color: var(--ps-text); cursor: pointer;
}
.ps-button:hover { background: var(--ps-bg-hover); }
.ps-icon-button { padding: 2px 7px; }
.ps-notices:empty { display: none; }
.ps-notice { padding: 4px 10px; background: var(--ps-notice-bg); border-bottom: 1px solid var(--ps-notice-border); font-size: 12px; }
.ps-main { flex: 1; min-height: 0; position: relative; }
.ps-view { height: 100%; display: flex; flex-direction: column; }
.ps-view[hidden] { display: none; }
.ps-loading, .ps-empty { padding: 24px; color: var(--ps-text-soft); }
.ps-empty { white-space: pre-wrap; }
.ps-error { padding: 12px 16px; color: var(--ps-error); background: var(--ps-error-bg); border-radius: 4px; margin: 8px; }
kbd {
  font: 11px ui-monospace, monospace; padding: 0 4px; border: 1px solid var(--ps-border);
  border-bottom-width: 2px; border-radius: 3px; background: var(--ps-bg);
}

.tv { display: flex; flex-direction: column; height: 100%; position: relative; outline: none; }
/* One line whatever it holds at 1280 px ("Linked k of N" too): below 1440 px the tools lose their
   key caps (the keys are in their titles and the help) and the search box narrows; the status line
   gives up the rest. */
.tv-toolbar {
  display: flex; align-items: center; gap: 6px; padding: 3px 8px; border-bottom: 1px solid var(--ps-border-soft);
  flex-wrap: nowrap; white-space: nowrap;
}
.tv-toolbar > :not(.tv-status) { flex: none; }
.tv-tools { display: flex; gap: 2px; }
.tv-tool {
  font: inherit; padding: 2px 8px; border: 1px solid var(--ps-border); background: var(--ps-bg); color: var(--ps-text); cursor: pointer;
}
.tv-tool:first-child { border-radius: 4px 0 0 4px; }
.tv-tool:last-child { border-radius: 0 4px 4px 0; }
.tv-tool.active { background: var(--ps-accent-bg); border-color: var(--ps-accent-border); color: var(--ps-accent); }
.tv-toggle { display: flex; align-items: center; gap: 2px; cursor: pointer; }
.tv-searchbox { display: flex; align-items: center; gap: 4px; }
.tv-search { font: inherit; width: 190px; padding: 2px 6px; background: var(--ps-bg); color: var(--ps-text); border: 1px solid var(--ps-border); border-radius: 3px; }
.tv-search-count { color: var(--ps-text-soft); font-size: 12px; min-width: 40px; }
.tv-search-count:empty { display: none; }
@media (max-width: 1440px) {
  .tv-tool kbd { display: none; }
  .tv-search { width: 150px; }
}
.tv-status { color: var(--ps-text-muted); font-size: 12px; white-space: nowrap; min-width: 0; overflow: hidden; text-overflow: ellipsis; }
.tv-notices:empty { display: none; }
.tv-notices details summary { cursor: pointer; }
.tv-body { flex: 1; min-height: 120px; display: flex; flex-direction: column; position: relative; }
.tv-axis { display: block; flex: none; width: 100%; height: 30px; }
.tv-scroll { flex: 1; overflow-y: auto; overflow-x: hidden; position: relative; min-height: 0; }
.tv-canvas { display: block; position: sticky; top: 0; cursor: default; touch-action: none; }
.tv-canvas.over-event { cursor: pointer; }
.tv-canvas.over-header { cursor: pointer; }
.tv-canvas[data-tool="pan"] { cursor: grab; }
.tv-canvas[data-tool="zoom"] { cursor: zoom-in; }
.tv-canvas[data-tool="timing"] { cursor: col-resize; }
.tv-canvas.grabbing { cursor: grabbing; }
.tv-overlay {
  position: absolute; inset: 0; display: flex; align-items: center; justify-content: center;
  background: var(--ps-overlay);
}
.tv-splitter { height: 5px; cursor: row-resize; background: var(--ps-border-soft); flex: none; }
.tv-details { box-sizing: border-box; height: min(180px, 19vh); overflow: auto; padding: 6px 12px; flex: none; font-size: 12px; }
.tv-details h3 { margin: 4px 0; font-size: 13px; }
.tv-details h4 { margin: 8px 0 2px; font-size: 12px; }
.tv-details-grid { display: grid; grid-template-columns: minmax(280px, 1fr) 2fr; gap: 16px; }
.tv-kv { border-collapse: collapse; }
.tv-kv th { text-align: left; color: var(--ps-text-muted); font-weight: normal; padding: 1px 12px 1px 0; vertical-align: top; white-space: nowrap; }
.tv-kv td { padding: 1px 0; word-break: break-word; }
.tv-pre { margin: 0; white-space: pre-wrap; font: 11px ui-monospace, monospace; max-height: 160px; overflow: auto; }
.tv-flows ul { margin: 0; padding-left: 16px; }
.tv-summary { border-collapse: collapse; width: 100%; }
.tv-summary th { text-align: left; border-bottom: 1px solid var(--ps-border); padding: 2px 8px; cursor: pointer; user-select: none; white-space: nowrap; }
.tv-summary td { padding: 1px 8px; border-bottom: 1px solid var(--ps-row-line); }
.tv-summary .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.tv-hint { color: var(--ps-text-muted); margin: 4px 0; }
.tv-tooltip {
  position: absolute; z-index: 5; pointer-events: none; background: var(--ps-bg); border: 1px solid var(--ps-border);
  border-radius: 4px; padding: 4px 8px; box-shadow: 0 2px 6px var(--ps-shadow); max-width: 320px;
  font-size: 12px; word-break: break-all;
}
.tv-help {
  position: absolute; inset: 0; z-index: 10; background: rgba(0, 0, 0, 0.35);
  display: flex; align-items: center; justify-content: center;
}
.tv-help[hidden] { display: none; }
.tv-help-box { background: var(--ps-bg); border-radius: 8px; padding: 16px 24px; max-height: 90%; overflow: auto; }
.tv-help-box h2 { margin: 0 0 8px; font-size: 16px; }
.tv-help-keys th { text-align: left; padding: 2px 16px 2px 0; white-space: nowrap; }
`;var xe="dark-mode";function se(s){try{if(s.parent===s)return null;let e=s.parent.document.body;return e?.querySelector("tb-webapp, tf-tensorboard")?e:null}catch{return null}}function ye(s){let e=se(s);return e?e.classList.contains(xe)?"dark":"light":s.matchMedia?.("(prefers-color-scheme: dark)").matches?"dark":"light"}function re(s,e=()=>{}){let t=s.document.documentElement,r=()=>{let l=ye(s);t.dataset.theme!==l&&(t.dataset.theme=l,e(l))};r();let o=s.matchMedia?.("(prefers-color-scheme: dark)");o?.addEventListener?.("change",r);let i=se(s),p=i?new MutationObserver(r):null;return i&&p?.observe(i,{attributes:!0,attributeFilter:["class"]}),()=>{o?.removeEventListener?.("change",r),p?.disconnect()}}function et(s={}){let e=document.createElement("style");e.textContent=te,document.head.append(e);let t=s.root??document.body;t.classList.add("ps-root"),re(window);let r=new F(s.base??O(import.meta.url)),o=new E(r,D());return t.append(o.el),o.loadRuns(),o}export{et as render};
